// A `sluice relay` process started with RELAY_ADDR=:0 (every interface) and the check that it
// answers on a host, for every_interface_test.ts. Run as a script inside a network namespace of
// that test's making, whose net.ipv6.bindv6only is 1, it starts such a relay, sets bindv6only
// back to 0 for its own clients, checks the relay on 127.0.0.1 and prints, as its last line, the
// JSON of the relay's output lines.
import assert from "node:assert/strict";
import { QMUX_DRAFTS } from "../../src/transport/mod.ts";
import { testCertificate, testCertificateFiles } from "../support/certs.ts";
import { dialOurs } from "../support/moq.ts";
import { type ServerProcess, spawnServer } from "../support/processes.ts";

/** A relay listening on `:0`. */
export interface EveryInterfaceRelay {
  readonly process: ServerProcess;
  /** The host of its `relay: listening on` line, as printed (`[::]`, `0.0.0.0`). */
  readonly printedHost: string;
  readonly port: number;
  /** Trusts the relay's certificate. */
  readonly http: Deno.HttpClient;
  stop(): Promise<void>;
}

/** Starts `sluice relay` with RELAY_ADDR=:0 and the test certificate; waits for it to listen. */
export async function startEveryInterfaceRelay(): Promise<EveryInterfaceRelay> {
  const { dir, cert, key } = await testCertificateFiles();
  const c = await testCertificate();
  const p = spawnServer("relay", {
    env: { RELAY_ADDR: ":0", CERT_FILE: cert, KEY_FILE: key },
    cwd: dir,
  });
  const http = Deno.createHttpClient({ caCerts: [c.certPem] });
  const stop = async () => {
    await p.stop();
    http.close();
    await Deno.remove(dir, { recursive: true });
  };
  try {
    const line = await p.waitForLine("relay: listening on ");
    const m = line && /listening on (\S+):(\d+) \(/.exec(line);
    assert.ok(m, p.lines.join("\n"));
    return { process: p, printedHost: m[1]!, port: Number(m[2]), http, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The relay on `port` at `host` (as in a URL) answers HTTPS and MoQ over each transport. */
export async function assertAnswers(
  host: string,
  port: number,
  http: Deno.HttpClient,
): Promise<void> {
  const health = await fetch(`https://${host}:${port}/health`, { client: http });
  assert.equal(health.status, 200, `HTTPS /health at ${host}`);
  await health.body?.cancel();
  for (const how of [{}, { webTransport: true }, { webSocket: [QMUX_DRAFTS[0]!] }] as const) {
    const moq = await dialOurs(port, { host, ...how });
    moq.close(0, "");
  }
}

if (import.meta.main) {
  const relay = await startEveryInterfaceRelay();
  // The relay has bound; our clients get dual-stack sockets again: Deno's QUIC client binds [::]
  // and reaches 127.0.0.1 only through that socket taking IPv4 too.
  await Deno.writeTextFile("/proc/sys/net/ipv6/bindv6only", "0");
  try {
    await assertAnswers("127.0.0.1", relay.port, relay.http);
  } finally {
    await relay.stop();
  }
  console.log(JSON.stringify(relay.process.lines));
}
