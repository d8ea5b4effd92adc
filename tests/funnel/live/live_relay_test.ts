// The funnel publishing through `sluice relay` (a real child process):
// signed per-session credentials, subscribers on the relay, the relay killed
// and restarted on the same port, and a credential that expires.
import assert from "node:assert/strict";
import { signToken } from "../../../src/auth/mod.ts";
import type { RedialTimers, RelayState } from "../../../src/funnel/mod.ts";
import type { MoqSession } from "../../../src/moq/mod.ts";
import { keySetText, makeKey, type TestKey } from "../../support/credentials.ts";
import { type ServerProcess, startServer } from "../../support/processes.ts";
import { freeUdpTcpPort } from "../../../src/transport/mod.ts";
import * as Net from "@moq/net";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialNet, dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until } from "../../support/wait.ts";
import { post, startLiveFunnel, take } from "../../support/live_funnel.ts";

const decoder = new TextDecoder();

/** The relay process itself (tests/support/processes.ts), so a signal reaches the relay. */
function startRelayProcess(env: Record<string, string>): Promise<ServerProcess> {
  return startServer("relay", { env });
}

async function stopRelayProcess(p: ServerProcess): Promise<void> {
  await p.stop();
}

/** Stops the funnel, then the relay process, then removes the fixture's files. */
async function stopAll(f: AsyncDisposable, relay: ServerProcess, fx: Fixture): Promise<void> {
  await f[Symbol.asyncDispose]();
  await stopRelayProcess(relay);
  await fx.cleanup();
}

interface Fixture {
  readonly key: TestKey;
  readonly dir: string;
  readonly cert: string;
  readonly keyFile: string;
  readonly relayEnv: Record<string, string>;
  /** The funnel's environment for publishing through the relay with signed credentials only. */
  signedFunnelEnv(scheme: "moqt" | "https" | "wss"): Record<string, string>;
  readonly port: number;
  subscriberToken(): Promise<string>;
  cleanup(): Promise<void>;
}

async function fixture(): Promise<Fixture> {
  const files = await testCertificateFiles();
  const key = await makeKey();
  const keyFile = `${files.dir}/funnel.jwk`;
  await Deno.writeTextFile(keyFile, JSON.stringify(key.privateJwk));
  await Deno.writeTextFile(`${files.dir}/keys.json`, keySetText(key));
  const port = freeUdpTcpPort();
  return {
    key,
    dir: files.dir,
    cert: files.cert,
    keyFile,
    port,
    relayEnv: {
      RELAY_ADDR: `127.0.0.1:${port}`,
      CERT_FILE: files.cert,
      KEY_FILE: files.key,
      SLUICE_AUTH_KEYS: `${files.dir}/keys.json`,
    },
    signedFunnelEnv: (scheme) => ({
      FUNNEL_SERVE_ADDR: "none",
      RELAY_URL: `${scheme}://localhost:${port}/`,
      RELAY_SIGNING_KEY: keyFile,
      RELAY_PUBLISH: "room",
      RELAY_CA_FILE: files.cert,
    }),
    subscriberToken: () =>
      signToken(key.privateJwk, {
        scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
      }, { ttlSeconds: 600 }),
    cleanup: () => Deno.remove(files.dir, { recursive: true }),
  };
}

/** Resolves once a subscription ends, cleanly or with an error. */
async function ends(sub: AsyncIterable<unknown>): Promise<void> {
  try {
    for await (const _ of sub) {
      // drain
    }
  } catch {
    // ended with the session
  }
}

/** Subscribes through the relay once it announces the broadcast. */
async function relaySubscriber(port: number, jwt: string): Promise<MoqSession> {
  const moq = await dialOurs(port, { jwt });
  await seeAnnounced(moq, "room/1");
  return moq;
}

Deno.test("Through sluice relay: signed credentials, records in order; the relay killed and restarted, the funnel redials and serves the latest", async () => {
  using _q = quiet();
  const fx = await fixture();
  let relay = await startRelayProcess(fx.relayEnv);
  const states: RelayState[] = [];
  const logs: string[] = [];
  // Real timers, with every delay the client asks for written down.
  const delays: number[] = [];
  const timers: RedialTimers = {
    setTimeout: (fn, ms) => {
      delays.push(ms);
      return setTimeout(fn, ms);
    },
    clearTimeout: (id) => clearTimeout(id as number),
  };
  const f = await startLiveFunnel(fx.signedFunnelEnv("moqt"), {
    live: { onRelayState: (s) => states.push(s), timers },
    log: {
      error: (m) => logs.push(`error ${m}`),
      warn: (m) => logs.push(`warn ${m}`),
      info: (m) => logs.push(`info ${m}`),
      debug: () => {},
    },
  });
  const sessions: MoqSession[] = [];
  try {
    assert.match(f.funnel.summary.find((l) => l.startsWith("Relay:"))!, /moqt:\/\/localhost/);
    assert.equal(f.funnel.summary.find((l) => l.startsWith("Serve:")), "Serve: none");
    const client = f.funnel.live.relay!;
    await until(() => client.state === "connected", "the funnel's relay session");

    await post(f.base, "room/1/chat", '"one"');
    const jwt = await fx.subscriberToken();
    const first = await relaySubscriber(fx.port, jwt);
    sessions.push(first);
    // A stopping relay sends GOAWAY and waits for its sessions to leave: this one does.
    first.goaway.then(() => first.close(0, "goaway"));
    const sub = first.subscribe("room/1", "chat");
    assert.deepEqual(await take(sub, 1), [{ seq: 1, frame: '{"payload":"one"}' }]);
    await post(f.base, "room/1/chat", '"two"');
    await post(f.base, "room/1/chat", '"three"');
    assert.deepEqual(await take(sub, 2), [
      { seq: 2, frame: '{"payload":"two"}' },
      { seq: 3, frame: '{"payload":"three"}' },
    ]);

    // Stop the relay: its GOAWAY names no other relay, so the funnel leaves; commits go on.
    await stopRelayProcess(relay);
    assert.ok(logs.some((l) => /^warn Relay .*: GOAWAY$/.test(l)), logs.join("\n"));
    await until(() => client.state === "reconnecting", "the funnel to notice");
    await ends(sub);
    assert.equal((await post(f.base, "room/1/chat", '"while down"')).status, 201);

    relay = await startRelayProcess(fx.relayEnv);
    await until(
      () => client.state === "connected" && client.sessions === 2,
      "the funnel to redial",
    );
    assert.ok(states.includes("reconnecting"));
    assert.ok(delays.includes(2000), `the spec's 2 s redial delay (${delays})`);
    assert.ok(
      logs.some((l) => /^warn Relay .*: session ended .*; redialing in 2 s$/.test(l)),
      logs.join("\n"),
    );
    assert.ok(
      logs.some((l) => /^info Relay .*: connected, announcing 1 broadcast/.test(l)),
      logs.join("\n"),
    );
    assert.ok(
      !logs.some((l) => l.includes("jwt=") && !l.includes("jwt=***")),
      "no credential in logs",
    );
    const again = await relaySubscriber(fx.port, jwt);
    sessions.push(again);
    const resub = again.subscribe("room/1", "chat");
    assert.deepEqual(await take(resub, 1), [{ seq: 4, frame: '{"payload":"while down"}' }]);
    await post(f.base, "room/1/chat", '"five"');
    assert.deepEqual(await take(resub, 1), [{ seq: 5, frame: '{"payload":"five"}' }]);

    const history = await (await fetch(`${f.base}/tracks/room/1/chat`)).json();
    assert.deepEqual(
      history.records.map((r: { payload: string }) => r.payload),
      ["one", "two", "three", "while down", "five"],
    );
  } finally {
    for (const s of sessions) s.close(0, "");
    await stopAll(f, relay, fx);
  }
});

Deno.test("Through sluice relay over WebSocket (RELAY_URL=wss://): records reach subscribers; a restarted relay is redialed", async () => {
  using _q = quiet();
  const fx = await fixture();
  let relay = await startRelayProcess(fx.relayEnv);
  // Redial after 200 ms (shipped RELAY_REDIAL_MS, 2 s), so the restart is followed quickly;
  // publisher_outage_test.ts redials at the shipped delay.
  const f = await startLiveFunnel(fx.signedFunnelEnv("wss"), { live: { redialMs: 200 } });
  const sessions: MoqSession[] = [];
  try {
    assert.match(
      f.funnel.summary.find((l) => l.startsWith("Relay:"))!,
      /wss:\/\/localhost:\d+\/ \(WebSocket; a fresh credential/,
    );
    const client = f.funnel.live.relay!;
    await until(() => client.state === "connected", "the funnel's relay session over WebSocket");
    assert.equal(client.session?.transport.transport, "websocket");
    await post(f.base, "room/1/chat", '"one"');
    const jwt = await fx.subscriberToken();
    // One subscriber over WebSocket as well, one over native QUIC.
    const viaWs = await dialOurs(fx.port, { jwt, webSocket: ["qmux-02"] });
    const viaQuic = await relaySubscriber(fx.port, jwt);
    sessions.push(viaWs, viaQuic);
    await seeAnnounced(viaWs, "room/1");
    const subs = [viaWs, viaQuic].map((m) => m.subscribe("room/1", "chat"));
    for (const sub of subs) {
      assert.deepEqual(await take(sub, 1), [{ seq: 1, frame: '{"payload":"one"}' }]);
    }
    await post(f.base, "room/1/chat", '"two"');
    for (const sub of subs) {
      assert.deepEqual(await take(sub, 1), [{ seq: 2, frame: '{"payload":"two"}' }]);
    }
    const http = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(fx.cert)] });
    const metrics = await (await fetch(`https://localhost:${fx.port}/metrics`, { client: http }))
      .text();
    http.close();
    // The funnel and one subscriber: both sessions counted as WebSocket.
    assert.match(metrics, /sluice_relay_sessions_total\{transport="websocket",class="client"\} 2/);

    await stopRelayProcess(relay);
    await until(() => client.state === "reconnecting", "the funnel to notice");
    relay = await startRelayProcess(fx.relayEnv);
    await until(() => client.state === "connected" && client.sessions === 2, "a new session");
    const again = await dialOurs(fx.port, { jwt, webSocket: ["qmux-02"] });
    sessions.push(again);
    await seeAnnounced(again, "room/1");
    const resub = again.subscribe("room/1", "chat");
    assert.deepEqual(await take(resub, 1), [{ seq: 2, frame: '{"payload":"two"}' }]);
  } finally {
    for (const s of sessions) s.close(0, "");
    await stopAll(f, relay, fx);
  }
});

Deno.test("Through sluice relay over WebTransport: the credential's expiry ends the session and the funnel recovers with a fresh one", async () => {
  using _q = quiet();
  const fx = await fixture();
  const relay = await startRelayProcess(fx.relayEnv);
  // The redial delay and the 10 s dial deadline run on real time; the credential's expiry timer
  // (its 60 s lifetime, the only timer that long) is fired by hand.
  const expiries: { fn: () => void; ms: number; cancelled: boolean }[] = [];
  const timers: RedialTimers = {
    setTimeout: (fn, ms) => {
      if (ms <= 30_000) return setTimeout(fn, ms);
      const t = { fn, ms, cancelled: false };
      expiries.push(t);
      return t;
    },
    clearTimeout: (id) => {
      if (typeof id === "number") clearTimeout(id);
      else (id as { cancelled: boolean }).cancelled = true;
    },
  };
  const f = await startLiveFunnel(fx.signedFunnelEnv("https"), {
    live: { redialMs: 100, timers, relayCredentialTtlSeconds: 60 },
  });
  const sessions: MoqSession[] = [];
  try {
    const client = f.funnel.live.relay!;
    await until(() => client.state === "connected", "the funnel's relay session");
    assert.equal(expiries.length, 1);
    // The timer is set for the credential's lifetime (the signer truncates to whole seconds).
    assert.ok(expiries[0]!.ms > 58_000 && expiries[0]!.ms <= 60_000, `${expiries[0]!.ms}`);
    await post(f.base, "room/1/chat", "1");
    const jwt = await fx.subscriberToken();
    const before = await relaySubscriber(fx.port, jwt);
    sessions.push(before);
    const sub = before.subscribe("room/1", "chat");
    assert.deepEqual(await take(sub, 1), [{ seq: 1, frame: '{"payload":1}' }]);

    expiries[0]!.fn();
    await until(() => client.sessions === 2 && client.state === "connected", "a fresh session");
    assert.equal(expiries.length, 2, "the new session's credential has its own expiry");

    // The relay holds a track for a moment after its route ends, and the funnel's new session
    // brings the broadcast back: the subscriber keeps its subscription and misses nothing.
    const after = await relaySubscriber(fx.port, jwt);
    sessions.push(after);
    const resub = after.subscribe("room/1", "chat");
    assert.deepEqual(await take(resub, 1), [{ seq: 1, frame: '{"payload":1}' }]);
    await post(f.base, "room/1/chat", "2");
    assert.deepEqual(await take(resub, 1), [{ seq: 2, frame: '{"payload":2}' }]);
    assert.deepEqual(await take(sub, 1), [{ seq: 2, frame: '{"payload":2}' }]);
  } finally {
    for (const s of sessions) s.close(0, "");
    await stopAll(f, relay, fx);
  }
});

Deno.test("Through sluice relay: a relay killed without closing (SIGKILL) is noticed by the idle timeout and redialed", async () => {
  using _q = quiet();
  const fx = await fixture();
  let relay = await startRelayProcess(fx.relayEnv);
  // An idle timeout of 1.5 s (shipped 1 s) and redial after 200 ms (shipped 2 s): what is tested
  // is that a silent relay is noticed and redialed; publisher_outage_test.ts kills a funnel with
  // SIGKILL at the shipped timings.
  const f = await startLiveFunnel(fx.signedFunnelEnv("moqt"), {
    live: { relayIdleTimeoutMs: 1500, redialMs: 200 },
  });
  let subscriber: MoqSession | undefined;
  try {
    const client = f.funnel.live.relay!;
    await until(() => client.state === "connected", "the funnel's relay session");
    await post(f.base, "room/1/chat", '"before"');
    relay.child.kill("SIGKILL");
    await relay.child.status;
    await relay.done;
    await until(() => client.state !== "connected", "the funnel to notice the dead relay");
    assert.equal((await post(f.base, "room/1/chat", '"during"')).status, 201);
    relay = await startRelayProcess(fx.relayEnv);
    await until(() => client.state === "connected" && client.sessions === 2, "a new session");
    subscriber = await relaySubscriber(fx.port, await fx.subscriberToken());
    const sub = subscriber.subscribe("room/1", "chat");
    assert.deepEqual(await take(sub, 1), [{ seq: 2, frame: '{"payload":"during"}' }]);
  } finally {
    subscriber?.close(0, "");
    await stopAll(f, relay, fx);
  }
});

Deno.test("Through sluice relay with the credential in RELAY_URL: @moq/net subscribes on the relay over WebTransport; the session is ended at that credential's exp; the own listener serves too", async () => {
  using _q = quiet();
  const fx = await fixture();
  const relay = await startRelayProcess(fx.relayEnv);
  const publishJwt = await signToken(fx.key.privateJwk, {
    scopes: [{ actions: ["publish"], broadcast: { prefix: "room" } }],
  }, { ttlSeconds: 900 });
  const delays: number[] = [];
  const timers: RedialTimers = {
    setTimeout: (fn, ms) => {
      delays.push(ms);
      return setTimeout(fn, ms);
    },
    clearTimeout: (id) => clearTimeout(id as number),
  };
  // FUNNEL_SERVE_ADDR set as well: the funnel serves on its own listener too.
  const f = await startLiveFunnel({
    RELAY_URL: `moqt://localhost:${fx.port}/?jwt=${publishJwt}`,
    RELAY_CA_FILE: fx.cert,
  }, { live: { timers } });
  const direct = await dialOurs(f.moqPort);
  const net = await dialNet(fx.port, { jwt: await fx.subscriberToken(), webTransport: true });
  try {
    assert.ok(!f.funnel.summary.join("\n").includes(publishJwt), "the summary masks the jwt");
    const client = f.funnel.live.relay!;
    await until(() => client.state === "connected", "the funnel's relay session");
    assert.ok(delays.some((ms) => ms > 890_000 && ms <= 900_000), `expiry timer (${delays})`);
    await post(f.base, "room/1/chat", '"a"');
    const directSub = direct.subscribe("room/1", "chat");
    const listener = f.funnel.live.listener!;
    await until(
      async () => await listener.subscribers("room/1", "chat") === 1,
      "the direct subscription",
    );
    // Our own client on the relay tells when the funnel's broadcast is routed there.
    const watcher = await relaySubscriber(fx.port, await fx.subscriberToken());
    watcher.close(0, "");
    const sub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    const first = await sub.recvGroup();
    assert.equal(first?.sequence, 1);
    assert.equal(decoder.decode((await first!.readFrame())?.payload), '{"payload":"a"}');
    await post(f.base, "room/1/chat", '"b"');
    const second = await sub.recvGroup();
    assert.equal(second?.sequence, 2);
    assert.equal(decoder.decode((await second!.readFrame())?.payload), '{"payload":"b"}');
    sub.close();
    assert.deepEqual(await take(directSub, 2), [
      { seq: 1, frame: '{"payload":"a"}' },
      { seq: 2, frame: '{"payload":"b"}' },
    ]);
  } finally {
    direct.close(0, "");
    net.close();
    await stopAll(f, relay, fx);
  }
});
