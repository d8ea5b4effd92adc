// A relay or funnel under test as a real child process (through the GC host,
// so memory can be measured after a collection), with its certificate,
// credentials and every stderr line collected.
import { generateDevCertificate } from "../../../src/certs/mod.ts";
import { signToken } from "../../../src/auth/mod.ts";
import { writeKeySet } from "../key_set.ts";
import { freeUdpTcpPort } from "../../../src/transport/mod.ts";
import { rssMib } from "../loadgen/proc_stats.ts";
import { spawnServer } from "../../../tests/support/processes.ts";
import { sleep } from "../../../src/timers/mod.ts";

/** Which server runs. */
export type TargetKind = "relay" | "funnel";

/** Memory of the target right after a full collection. */
export interface GcSample {
  /** Resident set size, MiB. */
  readonly rssMib: number;
  /** V8 heap in use, MiB. */
  readonly heapMib: number;
  /** Memory of buffers outside the V8 heap, MiB. */
  readonly externalMib: number;
  /** Open file descriptors (sockets, files). */
  readonly fds: number;
  /** RSS once the C allocator also gave its free pages back (malloc_trim), MiB. */
  readonly trimmedRssMib: number;
}

/** A running target. */
export interface Target {
  readonly kind: TargetKind;
  /** UDP port of MoQ (native QUIC and WebTransport). */
  readonly moqPort: number;
  /** TCP port of the funnel's HTTP API (funnel only). */
  readonly httpPort: number;
  readonly certPem: string;
  readonly certSha256: Uint8Array;
  /** Credentials: `healthy` covers the healthy pair's path, `hostile` `fuzz/**` (and subscribing to the healthy path). */
  readonly jwt: { readonly healthy: string; readonly hostile: string };
  /** Every stderr line so far. */
  readonly lines: string[];
  /** Resolves with the exit code if the process ends. */
  readonly exited: Promise<number>;
  /** The server's process id (the deepest one, when it restarted itself with V8 flags). */
  pid(): number;
  /** RSS now, MiB. */
  rss(): number;
  /** Collects garbage in the target and reports its memory. */
  gc(): Promise<GcSample>;
  /** Stops the process (SIGTERM) and cleans up. */
  stop(): Promise<number>;
}

/** The broadcast the healthy pair uses. */
export const HEALTHY_PATH = "healthy/feed";
/** The track the healthy pair uses. */
export const HEALTHY_TRACK = "data";

async function credentials(
  dir: string,
): Promise<{ keys: string; healthy: string; hostile: string }> {
  const { keysFile: keys, privateJwk } = await writeKeySet(dir);
  const healthy = await signToken(privateJwk, {
    sub: "healthy",
    scopes: [{
      actions: ["publish", "subscribe", "post", "fetch"],
      broadcast: { exact: HEALTHY_PATH },
    }],
  });
  // Peers that hold a real credential: they may publish and subscribe under fuzz/, and
  // subscribe to the healthy broadcast (the soak's well-formed subscribers).
  const hostile = await signToken(privateJwk, {
    sub: "fuzz",
    scopes: [
      { actions: ["publish", "subscribe", "post"], broadcast: { prefix: "fuzz" } },
      { actions: ["subscribe"], broadcast: { exact: HEALTHY_PATH } },
    ],
  });
  return { keys, healthy, hostile };
}

/**
 * Starts `sluice relay` or `sluice funnel` (own listener, memory ledger), both
 * with credentials on. `ffi: false` denies FFI, so the server cannot give
 * memory back after bursts (to measure what that changes).
 */
export async function startTarget(
  kind: TargetKind,
  env: Record<string, string> = {},
  options: { ffi?: boolean } = {},
): Promise<Target> {
  const cert = await generateDevCertificate();
  const dir = await Deno.makeTempDir({ prefix: `sluice-${kind}-target-` });
  await Deno.writeTextFile(`${dir}/cert.pem`, cert.certPem);
  await Deno.writeTextFile(`${dir}/key.pem`, cert.keyPem);
  const moqPort = freeUdpTcpPort();
  const httpPort = kind === "funnel" ? freeUdpTcpPort() : moqPort;
  const creds = await credentials(dir);
  const host = new URL("../gc_host.ts", import.meta.url).pathname;
  const server = spawnServer(kind, {
    // The GC host runs what the server runs, with a GC hook: all flags (FFI denied on request).
    flags: "all",
    denoArgs: [...(options.ffi === false ? ["--deny-ffi"] : []), "--v8-flags=--expose-gc"],
    cli: host,
    env: {
      CERT_FILE: `${dir}/cert.pem`,
      // The GC host also trims the C allocator after each collection, to show the floor.
      GC_HOST_TRIM: options.ffi === false ? "0" : "1",
      KEY_FILE: `${dir}/key.pem`,
      SLUICE_AUTH_KEYS: creds.keys,
      ...(kind === "relay"
        ? { RELAY_ADDR: `127.0.0.1:${moqPort}` }
        : { FUNNEL_ADDR: `127.0.0.1:${httpPort}`, FUNNEL_SERVE_ADDR: `127.0.0.1:${moqPort}` }),
      ...env,
    },
  });
  const lines = server.lines;
  const exited = server.finished().then((s) => s.code);
  await server.ready(30_000);
  const pid = () => server.serverPid();
  let stopped: Promise<number> | undefined;
  return {
    kind,
    moqPort,
    httpPort,
    certPem: cert.certPem,
    certSha256: cert.sha256,
    jwt: { healthy: creds.healthy, hostile: creds.hostile },
    lines,
    exited,
    pid,
    rss: () => rssMib(pid()),
    gc: async () => {
      const before = lines.length;
      Deno.kill(pid(), "SIGUSR2");
      let line: string | undefined;
      for (let i = 0; i < 200 && !line; i++) {
        await sleep(25);
        line = lines.slice(before).find((l) => l.startsWith("gc-host: "));
      }
      if (!line) throw new Error(`The ${kind} did not report after SIGUSR2`);
      const m = JSON.parse(line.slice("gc-host: ".length));
      let fds = NaN;
      try {
        fds = [...Deno.readDirSync(`/proc/${pid()}/fd`)].length;
      } catch {
        // no /proc: no figure
      }
      const mib = (n: number) => Math.round((n / 2 ** 20) * 10) / 10;
      return {
        rssMib: mib(m.rss),
        heapMib: mib(m.heapUsed),
        externalMib: mib(m.external),
        fds,
        trimmedRssMib: mib(m.rssAfterTrim ?? NaN),
      };
    },
    stop: () =>
      stopped ??= (async () => {
        const { code } = await server.stop();
        await Deno.remove(dir, { recursive: true });
        return code;
      })(),
  };
}
