// The bench itself: for each transport and N, the raw ceiling, then the relay and the
// funnel's listener offered more than that ceiling allows, each against fresh receivers.
import { BROADCAST, OWN_CLI, size, TRACK, type Transport, values } from "./options.ts";
import { type Child, children, spawn } from "./children.ts";
import { measure, type Result } from "./measure.ts";
import { pace } from "./pace.ts";
import { formatResult } from "./report.ts";
import { generateDevCertificate } from "../../src/certs/mod.ts";
import { TrackProducer } from "../../src/moq/mod.ts";
import { benchMesh } from "../support/relay_processes.ts";
import {
  readUdpReceiveBuffers,
  RECOMMENDED_UDP_RECEIVE_BUFFER,
  udpReceiveBufferAdvice,
} from "../../src/transport/mod.ts";

type Mesh = Awaited<ReturnType<typeof benchMesh>>;

/** What every run of one transport and N shares. */
interface Run {
  readonly transport: Transport;
  readonly n: number;
  /** Late sessions (with --overload). */
  readonly late: number;
  readonly seconds: number;
  /** Certificate files of the children, and its hash. */
  readonly dir: string;
  readonly hash: string;
  readonly mesh: Mesh;
  readonly meshHash: string;
}

/** The steady receivers and, with --overload, the late ones. */
interface Receivers {
  readonly steady: Child;
  readonly late: Child | undefined;
  kill(): Promise<void>;
}

/** The parent process: runs every configuration and prints its report. */
export async function benchRole(): Promise<void> {
  const ns = values.n.split(",").map(Number);
  const transports = values.transport.split(",") as Transport[];
  const only = new Set(values.only.split(","));
  const seconds = Number(values.seconds);
  const overload = values.overload;
  const clis = values.cli ? values.cli.split(",") : [OWN_CLI];
  const cert = await generateDevCertificate();
  const dir = await Deno.makeTempDir({ prefix: "sluice-fanout-" });
  await Deno.writeTextFile(`${dir}/cert.pem`, cert.certPem);
  await Deno.writeTextFile(`${dir}/key.pem`, cert.keyPem);
  const hash = btoa(String.fromCharCode(...cert.sha256));
  const mesh = await benchMesh();
  printUdpBuffers();
  const meshHash = btoa(String.fromCharCode(...mesh.cert.sha256));
  const report = (label: string, r: Result, raw: number) =>
    console.log(formatResult(label, r, raw, overload));
  try {
    for (const transport of transports) {
      for (const n of ns) {
        const late = overload ? Math.max(5, Math.round(n / 10)) : 0;
        const run: Run = { transport, n, late, seconds, dir, hash, mesh, meshHash };
        console.log(`\n${transport}, ${n} subscribers, ${size} B groups, ${seconds} s:`);
        // 1. raw ceiling
        const raw = await runRaw(run, false);
        report("raw streams (ceiling)", raw, raw.perSecond);
        if (only.has("raw-turns")) {
          report("raw streams, in turns", await runRaw(run, true), raw.perSecond);
        }
        // Offer more than the ceiling allows, so delivery is the sender's limit.
        // (--offer sets it per subscriber instead, where the bare sender is not a ceiling.)
        const rate = values.offer ? Number(values.offer) : Math.ceil(raw.perSecond / n * 1.5);
        const tick = Number(values.tick);
        // Each --cli's relay in turn, against the same ceiling (a before/after in one run).
        for (const cli of only.has("relay") ? clis : []) {
          const r = await runRelay(run, rate, tick, cli);
          const label = cli === OWN_CLI ? "relay" : `relay ${cli}`;
          report(`${label} (offered ${rate}/s per sub)`, r, raw.perSecond);
        }
        // The same relay and moq-lite publisher, IETF draft 16 subscribers (side by side).
        for (const cli of only.has("relay-ietf") ? clis : []) {
          const r = await runRelay(run, rate, tick, cli, "ietf");
          const label = cli === OWN_CLI ? "relay, IETF subs" : `relay ${cli}, IETF subs`;
          report(`${label} (offered ${rate}/s per sub)`, r, raw.perSecond);
        }
        if (only.has("listener")) {
          const r = await runListener(run, rate, tick);
          report(`funnel listener (offered ${rate}/s)`, r, raw.perSecond);
        }
      }
    }
  } finally {
    for (const c of [...children]) await c.kill();
    await mesh.close();
    await Deno.remove(dir, { recursive: true });
  }
  // The publisher's QUIC endpoint would keep the process alive.
  Deno.exit(0);
}

// Drops at a full socket buffer shape the result: say what this host gives a socket.
function printUdpBuffers(): void {
  const udp = readUdpReceiveBuffers();
  console.log(
    udp
      ? `UDP receive buffer: net.core.rmem_default ${udp.defaultBytes}, rmem_max ${udp.maxBytes}` +
        (udpReceiveBufferAdvice(udp)
          ? ` (below the relay's recommended ${RECOMMENDED_UDP_RECEIVE_BUFFER})`
          : "")
      : "UDP receive buffer: not readable on this host",
  );
}

// The N steady sessions in one process; with --overload the late ones in another, so
// their setup time is the sender's, not that of a process busy receiving.
function receivers(run: Run, port: number, kind: string, hash: string): Receivers {
  const start = (count: number, more: number) =>
    spawn([
      "--role=receivers",
      `--transport=${run.transport}`,
      `--port=${port}`,
      `--hash=${hash}`,
      `--n=${count}`,
      `--kind=${kind}`,
      `--late=${more}`,
    ]);
  const steady = start(run.n, 0);
  const late = run.late > 0 ? start(0, run.late) : undefined;
  return {
    steady,
    late,
    kill: async () => {
      await steady.kill();
      await late?.kill();
    },
  };
}

// The bare sender, with or without delivery turns, measured against the same receivers.
async function runRaw(run: Run, turns: boolean): Promise<Result> {
  const sender = spawn([
    "--role=raw-sender",
    `--dir=${run.dir}`,
    `--size=${size}`,
    ...(turns ? ["--turns"] : []),
  ]);
  const { port } = await sender.line();
  const rr = receivers(run, Number(port), "raw", run.hash);
  const profile = values.profile && !turns
    ? async () => {
      const file = `${values.profile}/raw-${run.transport}-${run.n}.cpuprofile`;
      await sender.send(`profile ${run.seconds} ${file}`);
      await sender.line();
      console.error(`  raw sender profile: ${file}`);
    }
    : undefined;
  const r = await measure(
    sender.proc.pid,
    rr.steady,
    rr.late,
    run.seconds,
    () => rr.steady.send("go"),
    profile,
  );
  await rr.kill();
  await sender.kill();
  return r;
}

// `sluice relay` (from `cli`) serving one track this process publishes at `rate` groups/s.
async function runRelay(
  run: Run,
  rate: number,
  tick: number,
  cli: string,
  kind: "moq" | "ietf" = "moq",
): Promise<Result> {
  const name = `fanout-${run.transport}-${run.n}${kind === "ietf" ? "-ietf" : ""}` +
    (cli === OWN_CLI ? "" : `-${cli.replace(/\/src\/cli\.ts$/, "").replace(/\W+/g, "_")}`);
  const relay = await run.mesh.relay(name, [], values.profile ? { RELAY_PPROF: "1" } : {}, cli);
  const track = new TrackProducer({ cache: 64 });
  const publisher = await relay.dial({
    maxGroupQueue: 64,
    serve: (r) => (r.path === BROADCAST && r.track === TRACK ? track : "not_found"),
  });
  publisher.announce(BROADCAST);
  const body = new Uint8Array(size).fill(7);
  let seq = 0;
  track.writeGroup(seq++, body);
  const rcv = receivers(run, relay.port, kind, run.meshHash);
  let stopPace = () => {};
  const startPace = () => void (stopPace = pace(rate, tick, () => track.writeGroup(seq++, body)));
  const profile = values.profile
    ? async () => {
      const file = `${values.profile}/${name}.cpuprofile`;
      await Deno.writeTextFile(file, await relay.profile(run.seconds));
      console.error(`  relay profile: ${file}`);
    }
    : undefined;
  const r = await measure(relay.child.pid, rcv.steady, rcv.late, run.seconds, startPace, profile);
  stopPace();
  await rcv.kill();
  publisher.close();
  await relay.stop();
  return r;
}

// The funnel's listener worker in a child, fed committed records at `rate`/s.
async function runListener(run: Run, rate: number, tick: number): Promise<Result> {
  const child = spawn(["--role=listener", `--dir=${run.dir}`, `--size=${size}`]);
  const { port } = await child.line();
  const rcv = receivers(run, Number(port), "moq", run.hash);
  const r = await measure(
    child.proc.pid,
    rcv.steady,
    rcv.late,
    run.seconds,
    () => child.send(`rate ${rate} ${tick}`),
  );
  await rcv.kill();
  await child.kill();
  return r;
}
