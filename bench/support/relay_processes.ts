// Relay processes for the mesh benchmarks (tests/support/processes.ts: the relay itself, with
// its shipped permissions) on a free port with a development certificate, dialing the peers it
// is given.
import { type DevCertificate, generateDevCertificate } from "../../src/certs/mod.ts";
import { connect, type MoqSession, type MoqSessionOptions, VERSIONS } from "../../src/moq/mod.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import { freeUdpTcpPort } from "../../src/transport/mod.ts";
import { sleep } from "../../src/timers/mod.ts";
import { type ServerProcess, startServer } from "../../tests/support/processes.ts";

/** A running relay process. */
export interface BenchRelay {
  readonly port: number;
  readonly child: Deno.ChildProcess;
  readonly log: string[];
  readonly process: ServerProcess;
  /** Dials the relay with our client. */
  dial(options?: MoqSessionOptions): Promise<MoqSession>;
  /** The text of /metrics. */
  metrics(): Promise<string>;
  /** A CPU profile of `seconds` (`.cpuprofile` JSON); the relay must run with RELAY_PPROF=1. */
  profile(seconds: number): Promise<string>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/** What relays of one benchmark share: a certificate written to a temporary directory. */
export interface BenchMesh {
  readonly cert: DevCertificate;
  readonly dir: string;
  /**
   * Starts a relay dialing `peers` (their ports on 127.0.0.1); `cli` is the
   * `src/cli.ts` to run (default this checkout's: another checkout's gives a
   * before/after in one run).
   */
  relay(
    name: string,
    peers?: readonly number[],
    env?: Record<string, string>,
    cli?: string,
  ): Promise<BenchRelay>;
  /** Stops every relay and removes the directory. */
  close(): Promise<void>;
}

/** Prepares a mesh: one development certificate, which every relay also trusts for its peers. */
export async function benchMesh(): Promise<BenchMesh> {
  const cert = await generateDevCertificate();
  const dir = await Deno.makeTempDir({ prefix: "sluice-mesh-bench-" });
  await Deno.writeTextFile(`${dir}/cert.pem`, cert.certPem);
  await Deno.writeTextFile(`${dir}/key.pem`, cert.keyPem);
  const relays: BenchRelay[] = [];
  const http = Deno.createHttpClient({ caCerts: [cert.certPem] });
  return {
    cert,
    dir,
    async relay(name, peers = [], env = {}, cli) {
      const port = freeUdpTcpPort();
      const process = await startServer("relay", {
        env: {
          RELAY_ADDR: `127.0.0.1:${port}`,
          CERT_FILE: `${dir}/cert.pem`,
          KEY_FILE: `${dir}/key.pem`,
          PEER_CA_FILE: `${dir}/cert.pem`,
          RELAY_NAME: name,
          ...(peers.length ? { PEERS: peers.map((p) => `127.0.0.1:${p}`).join(",") } : {}),
          ...env,
        },
        ...(cli === undefined ? {} : { cli }),
      });
      const relay: BenchRelay = {
        port,
        child: process.child,
        log: process.lines,
        process,
        dial: async (options = {}) =>
          await connect(
            await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
              alpn: VERSIONS,
              serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
            }),
            { log: () => {}, ...options },
          ),
        metrics: async () =>
          await (await fetch(`https://localhost:${port}/metrics`, { client: http })).text(),
        profile: async (seconds) =>
          await (await fetch(`https://localhost:${port}/debug/pprof/profile?seconds=${seconds}`, {
            client: http,
          })).text(),
        stop: () => process.stop().then(() => {}),
      };
      relays.push(relay);
      return relay;
    },
    async close() {
      for (const r of relays) await r.stop();
      http.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Waits until `cond()` holds (checking every 20 ms), or throws naming `what` after `ms`. */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  what: string,
  ms = 30_000,
): Promise<void> {
  const until = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`Timed out waiting for ${what}`);
    await sleep(20);
  }
}
