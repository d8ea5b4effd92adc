// Stands up a scenario's processes and links: `sluice funnel` and `sluice
// relay` as child processes with the permission flags `deno task` ships
// (tests/support/processes.ts, through tests/funnel/_replicas.ts and tests/relay/mesh/_mesh.ts), UDP proxies
// on the links faults shape, a TCP proxy in front of PostgreSQL, and s3rver.
// Every process keeps its ports across a restart, so peers find it again.
import { freeUdpTcpPort } from "../../src/transport/mod.ts";
import { type CertificateFiles, testCertificateFiles } from "../support/certs.ts";
import { dropTable, findPostgres, freshTableName } from "../support/postgres.ts";
import type { ServerProcess } from "../support/processes.ts";
import { startS3Proxy } from "../support/s3_proxy.ts";
import { startS3rver, type TestS3 } from "../support/s3rver.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp_proxy.ts";
import { startUdpProxy, type UdpProxy } from "../support/udp_proxy.ts";
import { type FunnelProcess, startFunnelProcess } from "../funnel/_replicas.ts";
import { type MeshRelay, startMeshRelay } from "../relay/mesh/_mesh.ts";
import type { Scenario } from "./scenarios.ts";

/** A process of the cluster that faults can signal and restart. */
export interface Member {
  readonly name: string;
  /** Sends `signal` to the server's own process (not a wrapper). */
  signal(signal: Deno.Signal): void;
  /** SIGKILLs the process and waits until it is gone. */
  kill(): Promise<void>;
  /** Starts it again with the same configuration and ports. */
  restart(): Promise<void>;
  /** Output lines of the current process. */
  lines(): readonly string[];
  /** The current process's `/metrics` text, for a server that has them on its HTTPS port. */
  metrics?(): Promise<string>;
}

/** A scenario's running cluster. */
export interface Cluster extends AsyncDisposable {
  readonly scenario: Scenario;
  readonly members: ReadonlyMap<string, Member>;
  readonly links: ReadonlyMap<string, UdpProxy>;
  /** The TCP proxy in front of the storage (PostgreSQL or s3rver; none for a directory). */
  readonly storage: TcpProxy | undefined;
  /** HTTP base URLs of the funnels, `funnel-0` first. */
  readonly funnelBases: readonly string[];
  /** The UDP port subscribers dial (a proxy, or relay c of the mesh). */
  readonly subscriberPort: number;
  /** The process subscribers' sessions end at (the funnel's listener or a relay). */
  readonly subscriberServer: string;
  /**
   * Called (by the SIGKILL fault) with the name of a process just killed. A
   * killed server sends no CONNECTION_CLOSE: its subscribers would only notice
   * at their idle timeout (30 s), so the run ends their sessions at once.
   */
  killed(name: string): void;
  /** Adds a listener of {@linkcode killed}. */
  onKilled(listener: (name: string) => void): void;
  /** The certificate's PEM, which subscribers trust. */
  readonly certPem: string;
  /** Processes that exited without being told to, with their last lines. */
  readonly crashes: string[];
}

interface ProcessSpec {
  readonly name: string;
  /** Starts the process; `kill` SIGKILLs it and frees what its starter holds. */
  start(): Promise<{ process: ServerProcess; kill(): Promise<void>; metrics?(): Promise<string> }>;
}

function member(spec: ProcessSpec, crashes: string[]): Promise<Member> {
  let current: Awaited<ReturnType<ProcessSpec["start"]>>;
  let expectedExit = false;
  const watch = (): void => {
    const mine = current;
    // The output is read to its end first: the last lines say why it exited.
    Promise.all([mine.process.child.status, mine.process.done.catch(() => {})]).then(([status]) => {
      if (!expectedExit && mine === current) {
        crashes.push(
          `${spec.name} exited by itself (${JSON.stringify(status)}):\n` +
            mine.process.lines.slice(-30).join("\n"),
        );
      }
    });
  };
  const m: Member = {
    name: spec.name,
    signal(signal) {
      current.process.signal(signal);
    },
    async kill() {
      expectedExit = true;
      await current.kill();
    },
    async restart() {
      current = await spec.start();
      expectedExit = false;
      watch();
    },
    lines: () => current.process.lines,
    metrics: () => current.metrics?.() ?? Promise.resolve(""),
  };
  return m.restart().then(() => m);
}

/** Starts `scenario`'s cluster; dispose it to stop everything and remove its files. */
export async function startCluster(
  scenario: Scenario,
): Promise<Cluster> {
  const cleanups: (() => Promise<void>)[] = [];
  const dispose = async (): Promise<void> => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  };
  try {
    return await build(scenario, cleanups, dispose);
  } catch (e) {
    await dispose();
    throw e;
  }
}

async function build(
  scenario: Scenario,
  cleanups: (() => Promise<void>)[],
  dispose: () => Promise<void>,
): Promise<Cluster> {
  const files: CertificateFiles = await testCertificateFiles();
  cleanups.push(() => Deno.remove(files.dir, { recursive: true }));
  const certPem = await Deno.readTextFile(files.cert);
  const crashes: string[] = [];
  const members = new Map<string, Member>();
  cleanups.push(async () => {
    for (const m of members.values()) {
      m.signal("SIGCONT");
      await m.kill();
    }
  });
  const links = new Map<string, UdpProxy>();
  cleanups.push(async () => {
    for (const l of links.values()) await l.close();
  });
  const link = (name: string, targetPort: number): UdpProxy => {
    const proxy = startUdpProxy({ targetPort, seed: links.size + 1 });
    links.set(name, proxy);
    return proxy;
  };

  // The ledger.
  let ledger: string;
  let env: Record<string, string> = {};
  let storage: TcpProxy | undefined;
  if (scenario.backend === "directory") {
    const dir = await Deno.makeTempDir({ prefix: "sluice-chaos-" });
    cleanups.push(() => Deno.remove(dir, { recursive: true }));
    ledger = `file://${dir}/ledger`;
  } else if (scenario.backend === "s3") {
    const s3: TestS3 = await startS3rver("chaos");
    cleanups.push(() => s3.stop());
    // s3rver ignores If-None-Match, which the S3 ledger needs (docs/ledger.md): without it a
    // batch PUT stalled past its deadline lands late and replaces the acknowledged batch that
    // took its sequence. The S3 front honours it, as AWS S3, MinIO and R2 do.
    const front = await startS3Proxy(s3);
    cleanups.push(() => front.close());
    // The funnel reaches the store through a TCP proxy, which the storage faults cut or stall.
    storage = startTcpProxy("127.0.0.1", Number(new URL(front.endpoint).port));
    const proxy = storage;
    cleanups.push(() => proxy.close());
    ledger = s3.ledgerUri("ledger").replace(
      encodeURIComponent(s3.endpoint),
      encodeURIComponent(`http://127.0.0.1:${storage.port}`),
    );
    env = {
      AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    };
  } else {
    const url = await findPostgres();
    if (!url) throw new Error("PostgreSQL is needed by scenario pg-pair and none answers");
    const table = freshTableName();
    cleanups.push(() => dropTable(url, table));
    const target = new URL(url);
    storage = startTcpProxy(target.hostname, Number(target.port || 5432));
    const proxy = storage;
    cleanups.push(() => proxy.close());
    target.host = `127.0.0.1:${storage.port}`;
    target.searchParams.set("table", table);
    ledger = target.href;
  }

  // Relays.
  const relays = new Map<string, MeshRelay>();
  const relay = async (name: string, peers: () => string[]): Promise<number> => {
    const port = freeUdpTcpPort();
    const m = await member({
      name: `relay-${name}`,
      start: async () => {
        const r = await startMeshRelay(name, files, peers(), {}, port);
        relays.set(name, r);
        return {
          process: r.process,
          kill: () => r.stop("SIGKILL").then(() => {}),
          metrics: () => r.get("/metrics").then((res) => res.text()),
        };
      },
    }, crashes);
    members.set(m.name, m);
    return port;
  };

  // Funnels.
  const funnelBases: string[] = [];
  const funnel = async (
    index: number,
    live: () => Record<string, string>,
    viaRelay?: string,
  ): Promise<void> => {
    const httpPort = freeUdpTcpPort();
    const m = await member({
      name: `funnel-${index}`,
      start: async () => {
        const r = viaRelay ? relays.get(viaRelay) : undefined;
        // What startFunnelProcess reads of a relay: its port (RELAY_URL may point at a proxy).
        const relayNow = r &&
          { process: r.process, port: r.port, get: r.get, stop: () => r.stop().then(() => {}) };
        const f: FunnelProcess = await startFunnelProcess(ledger, relayNow, files, {
          FUNNEL_ADDR: `127.0.0.1:${httpPort}`,
          ...env,
          ...live(),
        });
        return { process: f.process, kill: () => f.kill() };
      },
    }, crashes);
    members.set(m.name, m);
    funnelBases.push(`http://127.0.0.1:${httpPort}`);
  };

  let subscriberPort: number;
  let subscriberServer = "relay-a";
  switch (scenario.topology) {
    case "listener": {
      const listenPort = freeUdpTcpPort();
      await funnel(0, () => ({ FUNNEL_SERVE_ADDR: `127.0.0.1:${listenPort}` }));
      subscriberPort = link("subscribers", listenPort).port;
      subscriberServer = "funnel-0";
      break;
    }
    case "relay": {
      const a = await relay("a", () => []);
      const up = link("upstream", a);
      await funnel(0, () => ({ RELAY_URL: `moqt://localhost:${up.port}/` }), "a");
      subscriberPort = link("subscribers", a).port;
      break;
    }
    case "mesh": {
      const a = await relay("a", () => []);
      const ab = link("mesh-ab", a);
      const b = await relay("b", () => [`127.0.0.1:${ab.port}`]);
      const bc = link("mesh-bc", b);
      subscriberPort = await relay("c", () => [`127.0.0.1:${bc.port}`]);
      subscriberServer = "relay-c";
      await funnel(0, () => ({}), "a");
      break;
    }
    case "pg-pair": {
      const a = await relay("a", () => []);
      await funnel(0, () => ({}), "a");
      await funnel(1, () => ({}), "a");
      subscriberPort = link("subscribers", a).port;
      break;
    }
  }
  const killListeners: ((name: string) => void)[] = [];
  return {
    scenario,
    subscriberServer,
    killed: (name) => killListeners.forEach((l) => l(name)),
    onKilled: (listener) => void killListeners.push(listener),
    members,
    links,
    storage,
    funnelBases,
    subscriberPort,
    certPem,
    crashes,
    [Symbol.asyncDispose]: dispose,
  };
}
