// The deploy stack end to end, with real containers: deploy/podman.sh builds the images (a rebuild
// reuses every cached layer and takes seconds; the first build takes minutes), podman-compose
// starts PostgreSQL, the relay and a funnel from deploy/compose.yaml with auth on (the key made at
// first start, read here from its volume to sign the test's credentials), records go in over HTTP
// and come back over HTTP and, with @moq/net as an independent subscriber, through the relay; then
// the stack is torn down. Without podman this file skips; with CI=true it fails instead
// (tests/support/requires.ts).
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { signToken } from "../../src/auth/mod.ts";
import { generateDevCertificate } from "../../src/certs/mod.ts";
import { VERSIONS } from "../../src/moq/mod.ts";
import { asWebTransport, connectWebTransport, freeUdpTcpPort } from "../../src/transport/mod.ts";
import { within } from "../support/wait.ts";
import { ignoreWithout } from "../support/requires.ts";

const root = new URL("../../", import.meta.url).pathname;
const script = `${root}deploy/podman.sh`;
const decoder = new TextDecoder();

interface Output {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function run(args: string[], env: Record<string, string> = {}): Promise<Output> {
  const out = await new Deno.Command(script, { args, env, stdin: "null" }).output();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/** Why podman cannot run here, or undefined when it can. */
async function podmanMissing(): Promise<string | undefined> {
  if (Deno.build.os !== "linux") return `containers are built on Linux only (${Deno.build.os})`;
  try {
    const out = await run(["check"]);
    return out.code === 0 ? undefined : (out.stdout + out.stderr).trim();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

const missing = await podmanMissing();
if (missing !== undefined) console.warn(`SKIP deploy tests: podman cannot run here (${missing})`);

async function poll(what: string, ms: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

Deno.test({
  name:
    "deploy: the compose stack (PostgreSQL, relay, funnel) from the built images takes records over HTTP and serves them over HTTP and through the relay to @moq/net",
  ignore: ignoreWithout("Podman", missing),
  async fn() {
    const project = `sluice-test-${Deno.pid}`;
    const relayPort = freeUdpTcpPort();
    const funnelPort = freeUdpTcpPort();
    const funnel2Port = freeUdpTcpPort();
    const funnel = `http://127.0.0.1:${funnelPort}`;
    const funnel2 = `http://127.0.0.1:${funnel2Port}`;
    // The relay's certificate: "relay" for the funnel on the stack's network, localhost for us.
    const cert = await generateDevCertificate({ hosts: ["relay", "localhost", "127.0.0.1"] });
    const certs = await Deno.makeTempDir({ prefix: "sluice-compose-" });
    await Deno.chmod(certs, 0o755);
    await Deno.writeTextFile(`${certs}/server.crt`, cert.certPem, { mode: 0o644 });
    await Deno.writeTextFile(`${certs}/server.key`, cert.keyPem, { mode: 0o600 });
    // The image's user (10001) reads the key; rootful podman maps it to the same uid here.
    await Deno.chown(`${certs}/server.key`, 10001, 10001);
    const env = {
      SLUICE_CERTS: certs,
      SLUICE_RELAY_PORT: String(relayPort),
      SLUICE_FUNNEL_PORT: String(funnelPort),
      SLUICE_FUNNEL2_PORT: String(funnel2Port),
      SLUICE_PG_PASSWORD: crypto.randomUUID(),
    };
    const containers = ["postgres", "relay", "funnel", "funnel-2"].map((s) => `${project}_${s}_1`);
    let net: Awaited<ReturnType<typeof Net.Connection.connect>> | undefined;
    let passed = false;
    try {
      const started = Date.now();
      const up = await run(["compose", "-p", project, "up", "-d"], env);
      assert.equal(up.code, 0, `compose up failed:\n${up.stdout}\n${up.stderr}`);
      console.log(`compose up (images built or reused) in ${Date.now() - started} ms`);

      // Each service's own health check, run by podman (no systemd here to run it on a timer).
      for (const name of containers) {
        await poll(
          `${name} to be healthy`,
          120_000,
          async () => (await run(["podman", "healthcheck", "run", name])).code === 0,
        );
      }
      const health = await (await fetch(`${funnel}/health`)).json();
      assert.equal(health.status, "ok");
      assert.match(JSON.stringify(health.ledger), /postgres/);

      // Auth is on: a request without a credential is refused; the key made at first start signs ours.
      const anonymous = await fetch(`${funnel}/tracks/room/1/chat`, { method: "POST", body: "1" });
      assert.equal(anonymous.status, 401);
      await anonymous.body?.cancel();
      const volume = await run(
        ["podman", "volume", "inspect", "--format", "{{.Mountpoint}}", `${project}_auth`],
      );
      assert.equal(volume.code, 0, volume.stderr);
      const signingKey = JSON.parse(await Deno.readTextFile(`${volume.stdout.trim()}/signing.jwk`));
      const token = await signToken(signingKey, {
        sub: "deploy-test",
        scopes: [{ actions: ["post", "fetch", "subscribe"], broadcast: { prefix: "room" } }],
      }, { ttlSeconds: 600 });
      const authorization = { authorization: `Bearer ${token}` };

      // Records in over HTTP, committed to PostgreSQL...
      const posted: string[] = [];
      for (const text of ["one", "two", "three"]) {
        const res = await fetch(`${funnel}/tracks/room/1/chat`, {
          method: "POST",
          headers: { "content-type": "application/json", ...authorization },
          body: JSON.stringify({ text }),
        });
        assert.equal(res.status, 201, await res.clone().text());
        posted.push((await res.json()).group);
      }
      // ... and back over HTTP, oldest first, from either funnel (they share the ledger).
      for (const from of [funnel, funnel2]) {
        const page = await (await fetch(`${from}/tracks/room/1/chat?limit=10`, {
          headers: authorization,
        })).json();
        assert.deepEqual(
          page.records.map((r: { group: string; payload: unknown }) => [r.group, r.payload]),
          posted.map((g, i) => [g, { text: ["one", "two", "three"][i] }]),
          `history from ${from}`,
        );
      }

      // Through the relay: @moq/net over WebTransport on the relay's published UDP port, with the
      // credential in the URL of the CONNECT request (our client, so the test's certificate is
      // trusted).
      const relayUrl = new URL(`https://127.0.0.1:${relayPort}/?jwt=${token}`);
      const wt = await connectWebTransport(relayUrl, {
        protocols: VERSIONS,
        caCerts: [cert.certPem],
      });
      net = await within(
        Net.Connection.connect(relayUrl, {
          transport: asWebTransport(wt) as unknown as WebTransport,
        }),
        10_000,
        "@moq/net to connect to the relay",
      );
      const announced = net.announced(Net.Path.empty());
      for (;;) {
        const e = await within(announced.next(), 30_000, "room/1 announced on the relay");
        assert.ok(e, "the relay's announce stream ended");
        if (e.path === "room/1" && e.active) break;
      }
      announced.close();
      const sub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
      const read = async () => {
        const group = await within(sub.recvGroup(), 15_000, "a group through the relay");
        assert.ok(group, "the subscription ended");
        const frame = await within(group.readFrame(), 15_000, "its frame");
        return [group.sequence, JSON.parse(decoder.decode(frame?.payload))];
      };
      // A subscription starts at the latest record (group sequence = ledger sequence + 1)...
      assert.deepEqual(await read(), [3, { sender: "deploy-test", payload: { text: "three" } }]);
      // ... and gets each new one as it is committed, whichever funnel took it.
      const res = await fetch(`${funnel2}/tracks/room/1/chat`, {
        method: "POST",
        headers: authorization,
        body: JSON.stringify({ text: "four" }),
      });
      assert.equal(res.status, 201);
      await res.body?.cancel();
      assert.deepEqual(await read(), [4, { sender: "deploy-test", payload: { text: "four" } }]);
      sub.close();
      passed = true;
    } finally {
      net?.close();
      if (!passed) {
        for (const name of [`${project}_auth-keys_1`, ...containers]) {
          const logs = await run(["podman", "logs", "--tail", "30", name]);
          console.error(`--- ${name}\n${logs.stdout}${logs.stderr}`);
        }
      }
      const down = await run(["compose", "-p", project, "down"], env);
      await run(["podman", "volume", "rm", "-f", `${project}_ledger-db`, `${project}_auth`]);
      await run(["podman", "network", "rm", "-f", `${project}_default`]);
      await Deno.remove(certs, { recursive: true });
      assert.equal(down.code, 0, `compose down failed:\n${down.stdout}\n${down.stderr}`);
    }
  },
});
