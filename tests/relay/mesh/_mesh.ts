// Relay processes for the mesh tests (tests/support/processes.ts: the relay itself, signalled
// directly, with the shipped permissions unless told otherwise), on a free port with the test
// certificate, which the relays also trust for their peers.
import { freeUdpTcpPort } from "../../../src/transport/mod.ts";
import {
  type CertificateFiles,
  testCertificate,
  testCertificateFiles,
} from "../../support/certs.ts";
import { type ServerOptions, type ServerProcess, startServer } from "../../support/processes.ts";
import { until } from "../../support/wait.ts";
import { families, sampleValue } from "../../support/prometheus.ts";
import { type LiveFunnel, startLiveFunnel } from "../../support/live_funnel.ts";
import type { FunnelDependencies } from "../../../src/funnel/mod.ts";
import { sleep } from "../../../src/timers/mod.ts";

/** A relay process of the mesh under test. */
export interface MeshRelay {
  readonly name: string;
  readonly port: number;
  /** `127.0.0.1:<port>`, as peers see it in `source`. */
  readonly address: string;
  readonly process: ServerProcess;
  /** GETs an HTTP path of the relay. */
  get(path: string): Promise<Response>;
  /** The /routes paths. */
  routes(): Promise<RoutePath[]>;
  /** One sample of a metric (without the `sluice_relay_` prefix), 0 when absent. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  /** Sends `signal` to the relay process and waits for it to exit; returns its exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/** One entry of /routes `paths`. */
export interface RoutePath {
  readonly path: string;
  readonly hops: number;
  readonly source: string;
  readonly rtt_ms: number;
  readonly bitrate_bps: number;
  readonly active: boolean;
}

/** The shared certificate files of one test (remove `dir` at the end). */
export function meshCertificate(): Promise<CertificateFiles> {
  return testCertificateFiles();
}

/**
 * Starts a relay process named `name` that dials `peers` (ports on
 * 127.0.0.1, or `host:port` text), with extra environment `env` (and
 * permission `flags`, default the shipped ones).
 */
export async function startMeshRelay(
  name: string,
  files: CertificateFiles,
  peers: (MeshRelay | string | number)[] = [],
  env: Record<string, string> = {},
  port = freeUdpTcpPort(),
  flags?: ServerOptions["flags"],
): Promise<MeshRelay> {
  const peerList = peers.map((p) =>
    typeof p === "string" ? p : `127.0.0.1:${typeof p === "number" ? p : p.port}`
  );
  const process = await startServer("relay", {
    env: {
      RELAY_ADDR: `127.0.0.1:${port}`,
      CERT_FILE: files.cert,
      KEY_FILE: files.key,
      PEER_CA_FILE: files.cert,
      RELAY_NAME: name,
      ...(peerList.length ? { PEERS: peerList.join(",") } : {}),
      ...env,
    },
    ...(flags ? { flags } : {}),
  });
  const http = Deno.createHttpClient({ caCerts: [(await testCertificate()).certPem] });
  const get = (path: string) => fetch(`https://localhost:${port}${path}`, { client: http });
  return {
    name,
    port,
    address: `127.0.0.1:${port}`,
    process,
    get,
    routes: async () => (await (await get("/routes")).json()).paths as RoutePath[],
    metric: async (metric, labels = {}) =>
      sampleValue(
        families(await (await get("/metrics")).text()),
        `sluice_relay_${metric}`,
        labels,
      ) ??
        0,
    stop: async (signal: Deno.Signal = "SIGTERM") => {
      const status = await process.stop(signal);
      try {
        http.close();
      } catch {
        // closed by an earlier stop
      }
      return status.code;
    },
  };
}

/** Stops every relay (SIGKILL: the test is over) and removes the certificate files. */
export async function stopMesh(
  relays: (MeshRelay | undefined)[],
  files: CertificateFiles,
): Promise<void> {
  for (const r of relays) await r?.stop("SIGKILL").catch(() => {});
  await Deno.remove(files.dir, { recursive: true });
}

/** Waits until `relay` has a route for `path` that satisfies `check`. */
export async function routeOf(
  relay: MeshRelay,
  path: string,
  check: (r: RoutePath) => boolean = () => true,
): Promise<RoutePath> {
  let found: RoutePath | undefined;
  await until(async () => {
    found = (await relay.routes()).find((r) => r.path === path && check(r));
    return found !== undefined;
  }, `a route for ${path} on ${relay.name}`);
  return found!;
}

/** Waits until the relay has logged a line matching `pattern` (its output arrives asynchronously). */
export async function logged(relay: MeshRelay, pattern: RegExp | string): Promise<void> {
  await relay.process.waitForLine(pattern);
}

/** A funnel in this process publishing through `relay`, with no MoQ listener of its own. */
export function funnelThrough(
  relay: MeshRelay,
  files: CertificateFiles,
  deps: FunnelDependencies = {},
): Promise<LiveFunnel> {
  return startLiveFunnel({
    RELAY_URL: `moqt://localhost:${relay.port}/`,
    RELAY_CA_FILE: files.cert,
    FUNNEL_SERVE_ADDR: "none",
  }, deps);
}

/** Calls `postNext` every `everyMs` until `stop()`, which resolves after the last call. */
export function keepPosting(
  postNext: () => Promise<void>,
  everyMs: number,
): { stop(): Promise<void> } {
  let posting = true;
  const loop = (async () => {
    while (posting) {
      await postNext();
      await sleep(everyMs);
    }
  })();
  return {
    stop: () => {
      posting = false;
      return loop;
    },
  };
}

/** The diamond of the failover tests: A; B and D dial A; C dials B and D (added to `relays`). */
export async function startDiamond(
  files: CertificateFiles,
  relays: MeshRelay[],
): Promise<{ a: MeshRelay; b: MeshRelay; d: MeshRelay; c: MeshRelay }> {
  const a = await startMeshRelay("a", files);
  relays.push(a);
  const b = await startMeshRelay("b", files, [a]);
  relays.push(b);
  const d = await startMeshRelay("d", files, [a]);
  relays.push(d);
  const c = await startMeshRelay("c", files, [b, d]);
  relays.push(c);
  return { a, b, d, c };
}
