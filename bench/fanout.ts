/**
 * Fan-out against its ceiling, in one run: N subscriber connections each
 * receive one-stream groups of `--size` bytes
 *
 *   1. raw: a bare sender opens one uni stream per group per connection
 *      (at most 16 in flight per connection, as the moq publisher does), as
 *      fast as it can: the ceiling;
 *   2. relay: `sluice relay` serves one track to the N subscribers, published
 *      from this process at more than the ceiling allows per subscriber;
 *   3. listener: the funnel's own MoQ listener (its worker) serves one
 *      track fed with committed records at the same rate.
 *
 * Delivery starts once all N sessions are set up (at N = 1000 the sessions
 * would otherwise be connecting to a sender already busy with the first ones).
 * Senders and receivers run in separate processes. Receivers read the way
 * a fast client does (BYOB readers, group streams counted without parsing
 * frames), so they cost as little per group as a client can; on a machine
 * with few cores they still share the cores with the sender, and the CPU
 * figures below say which side was saturated. Each figure is groups/s delivered
 * over the measured window and its ratio to raw.
 *
 * With --overload the report also gives, per run, each session's delivered
 * rate (min / median / max), how the skipped groups are spread over the
 * sessions, and whether sessions that connect while the sender is saturated
 * finish their setup (SETUP and SUBSCRIBE answered); those connect from a
 * process of their own, so their setup time is not that of a process busy
 * receiving.
 *
 *   deno run -A bench/fanout.ts [--n 10,100,1000] [--transport quic,webtransport]
 *     [--seconds 5] [--size 100] [--overload] [--only raw,relay,listener]
 *     [--warmup 2] [--offer R] [--tick 1] [--profile DIR]
 *
 * The relay's publisher and the listener's feed write the offered groups in
 * ticks of `--tick` ms: 1 (the default) spreads them out, larger ticks
 * deliver them in bursts, which the QUIC stack can pack together.
 *
 * `--only` may add `raw-turns`: the bare sender again, taking delivery turns
 * the way the serving loops do (what turns cost, and whether they make a
 * bare sender fair). The relay takes its turns per RELAY_DELIVERY_TURN_MS
 * from this environment (0 turns them off).
 *
 * With --profile the relay runs with RELAY_PPROF=1, and CPU profiles of it
 * and of the bare sender over the measured window are written to DIR
 * (summarise them with bench/support/cpuprofile_top.ts).
 *
 * Each run also reports the cores each process kept busy over the window,
 * the sender's CPU time per group delivered, and the UDP datagrams the
 * machine sent per group delivered (loopback: both directions; a batch the
 * kernel segments counts once). Senders and receivers share the machine's
 * cores, so a sender that costs more per group, or packs fewer groups into
 * each datagram, delivers fewer. The report starts with the host's UDP
 * receive buffer: below 4 MiB the relay's socket overflows at N = 100
 * (docs/relay.md, "UDP receive buffer").
 */
import { parseArgs } from "node:util";
import { generateDevCertificate } from "../src/certs/mod.ts";
import { type LedgerEntry, parseTrackPath } from "../src/ledger/mod.ts";
import { connect, DeliveryTurns, TrackProducer } from "../src/moq/mod.ts";
import { startWorkerListener } from "../src/funnel/mod.ts";
import { SAME_ORIGIN_ONLY } from "../src/http/mod.ts";
import { listen } from "../src/transport/mod.ts";
import { connectQuicSession } from "../src/transport/mod.ts";
import type { RecvStream, Session } from "../src/transport/mod.ts";
import { connectWebTransport } from "../src/transport/mod.ts";
import { decodeVarint } from "../src/wire/mod.ts";
import { encodeGroupStreamHeader } from "../src/moq/mod.ts";

import { benchMesh } from "./support/relay_processes.ts";
import { sleep } from "../src/timers/mod.ts";
import { quantile } from "./support/quantile.ts";
import { CLOCK_TICKS_PER_SECOND, cpuTicks, udpCounters } from "./loadgen/proc_stats.ts";
import { cpuProfile } from "../src/relay/mod.ts";
import {
  readUdpReceiveBuffers,
  RECOMMENDED_UDP_RECEIVE_BUFFER,
  udpReceiveBufferAdvice,
} from "../src/transport/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    n: { type: "string", default: "10,100,1000" },
    transport: { type: "string", default: "quic,webtransport" },
    seconds: { type: "string", default: "5" },
    size: { type: "string", default: "100" },
    overload: { type: "boolean", default: false },
    only: { type: "string", default: "raw,relay,listener" },
    profile: { type: "string", default: "" },
    warmup: { type: "string", default: "2" },
    turns: { type: "boolean", default: false },
    offer: { type: "string", default: "" },
    tick: { type: "string", default: "1" },
    // internal: child process roles
    role: { type: "string", default: "bench" },
    port: { type: "string", default: "0" },
    hash: { type: "string", default: "" },
    dir: { type: "string", default: "" },
    kind: { type: "string", default: "raw" },
    late: { type: "string", default: "0" },
  },
});

const SELF = new URL(import.meta.url).pathname;
const PROTOCOL = "moq-lite-05";
const BROADCAST = "bench/fanout";
const TRACK = "t";
const IN_FLIGHT = 16;
const size = Number(values.size);
type Transport = "quic" | "webtransport";

/** What a receivers process reports on "snap". */
interface Snap {
  readonly at: number;
  /** Groups received per session (the first N are the steady sessions). */
  readonly groups: number[];
  /** Highest group sequence received per session (skips are the span not received). */
  readonly highest: number[];
  /** Whether each session finished its setup (failed ones are left out of the rates). */
  readonly ok: boolean[];
  /** Late sessions: setup time in ms, or -1 while not done / failed. */
  readonly lateSetup: number[];
  readonly failed: number;
}

// ------------------------------------------------------------------ receivers

async function dial(transport: Transport, port: number, hash: string): Promise<Session> {
  const bytes = Uint8Array.from(atob(hash), (c) => c.charCodeAt(0));
  return transport === "quic"
    ? await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
      serverCertificateHashes: [{ algorithm: "sha-256", value: bytes }],
      alpn: [PROTOCOL],
    })
    : await connectWebTransport(new URL(`https://localhost:${port}/`), {
      serverCertificateHashes: [bytes],
      protocols: [PROTOCOL],
    });
}

/**
 * Child: N sessions (raw or moq), each counting the group streams it gets.
 * Answers "snap" on stdin with a JSON line; with `--late M`, "late" starts M
 * more sessions spread over one second and records how long their setup took.
 */
async function receiversRole(): Promise<void> {
  const transport = values.transport as Transport;
  const port = Number(values.port);
  const n = Number(values.n);
  const late = Number(values.late);
  const moq = values.kind !== "raw";
  const groups: number[] = [];
  const highest: number[] = [];
  const ok: boolean[] = [];
  const lateSetup: number[] = [];
  let failed = 0;
  const pool: ArrayBuffer[] = [];
  // Raw sessions wait for "go", so that all N are set up before the sender is busy.
  const starts: Array<() => Promise<void>> = [];
  let going = false;

  // One group stream, its type byte already read: GROUP header, then the body.
  const count = async (
    i: number,
    reader: ReadableStreamBYOBReader,
  ): Promise<void> => {
    let buf = pool.pop() ?? new ArrayBuffer(2048);
    let first = true;
    try {
      for (;;) {
        const { value, done } = await reader.read(new Uint8Array(buf));
        if (value) buf = value.buffer;
        if (done) break;
        if (first && value) {
          first = false;
          // GROUP header: its length, subscribe id, sequence.
          const length = decodeVarint(value, 0);
          const id = length && decodeVarint(value, length.length);
          const seq = id && decodeVarint(value, length.length + id.length);
          if (seq && seq.value > highest[i]!) highest[i] = seq.value;
        }
      }
      groups[i]!++;
    } catch {
      // stream reset: not delivered
    } finally {
      pool.push(buf);
    }
  };

  // Accepts uni streams and reads their type byte: group streams are counted
  // here (raw and moq alike), the moq SETUP stream goes to the moq session.
  const intercept = (i: number, session: Session): Session => {
    const others: RecvStream[] = [];
    let wake: (() => void) | undefined;
    let ended = false;
    const route = async (s: RecvStream): Promise<void> => {
      const reader = s.readable.getReader({ mode: "byob" });
      const head = await reader.read(new Uint8Array(1)).catch(() => undefined);
      const type = head?.value?.[0];
      if (type === 0) return await count(i, reader);
      if (type === undefined) return;
      reader.releaseLock();
      const rest = s.readable;
      others.push({
        readable: new ReadableStream({
          start(c) {
            c.enqueue(new Uint8Array([type]));
          },
          async pull(c) {
            const r = rest.getReader();
            for (;;) {
              const { value, done } = await r.read();
              if (done) break;
              c.enqueue(value);
            }
            c.close();
          },
        }),
      });
      wake?.();
    };
    (async () => {
      for (;;) {
        const s = await session.acceptUni().catch(() => undefined);
        if (!s) break;
        void route(s);
      }
      ended = true;
      wake?.();
    })();
    return new Proxy(session, {
      get(target, prop) {
        if (prop === "acceptUni") {
          return async () => {
            while (others.length === 0 && !ended) await new Promise<void>((r) => (wake = r));
            return others.shift();
          };
        }
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  };

  const open = async (i: number): Promise<void> => {
    groups[i] = 0;
    highest[i] = 0;
    const session = intercept(i, await dial(transport, port, values.hash));
    if (!moq) {
      // The raw sender starts on the first bidi stream's byte: on "go" for
      // the steady sessions, at once for the late ones.
      const bidi = await session.openBidi();
      const w = bidi.writable.getWriter();
      starts.push(() => w.write(new Uint8Array([1])));
      if (going) await starts.pop()!();
      return;
    }
    const m = await connect(session, { log: () => {} });
    for (;;) {
      const sub = m.subscribe(BROADCAST, TRACK);
      try {
        await sub.ready;
        return;
      } catch {
        await sleep(50); // not announced yet
      }
    }
  };

  // A session whose setup is not done in 20 s counts as failed.
  const opened = (i: number): Promise<void> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    return Promise.race([
      open(i),
      new Promise<void>((_, reject) => (timer = setTimeout(reject, 20_000))),
    ]).finally(() => clearTimeout(timer));
  };
  const steady: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    steady.push(opened(i).then(() => void (ok[i] = true), () => void failed++));
    if (i % 50 === 49) await Promise.all(steady.slice(-50));
  }
  await Promise.all(steady);
  console.log(JSON.stringify({ ready: true, failed }));
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    for (const cmd of line.split("\n")) {
      if (cmd === "go") {
        going = true;
        await Promise.all(starts.splice(0).map((start) => start()));
      } else if (cmd === "snap") {
        const snap: Snap = { at: performance.now(), groups, highest, ok, lateSetup, failed };
        console.log(JSON.stringify(snap));
      } else if (cmd === "late") {
        for (let k = 0; k < late; k++) {
          const i = n + k;
          lateSetup[k] = -1;
          const t0 = performance.now();
          open(i).then(() => (lateSetup[k] = performance.now() - t0), () => {});
          await sleep(1000 / late);
        }
      } else if (cmd === "exit") Deno.exit(0);
    }
  }
}

// ------------------------------------------------------------------ raw sender

/** Child: accepts connections and sends one uni stream per group to each, as fast as it can. */
async function rawSenderRole(): Promise<void> {
  // With --turns the bare sender takes turns the way the serving loops do.
  const turns = values.turns ? new DeliveryTurns() : undefined;
  const dir = values.dir;
  const server = await listen({
    protocols: [PROTOCOL],
    certPem: await Deno.readTextFile(`${dir}/cert.pem`),
    keyPem: await Deno.readTextFile(`${dir}/key.pem`),
    onSession: (session) => void feed(session),
  });
  const body = new Uint8Array(size).fill(7);
  async function feed(session: Session): Promise<void> {
    const start = await session.acceptBidi();
    if (!start) return;
    const r = start.readable.getReader();
    await r.read();
    let closed = false;
    let seq = 0;
    session.closed.then(() => (closed = true), () => (closed = true));
    // IN_FLIGHT loops of open, write, finish: at most that many streams in flight.
    const loop = async (): Promise<void> => {
      while (!closed) {
        // Same bytes as a moq group stream: type, subscribe id, sequence, then the payload.
        const header = encodeGroupStreamHeader({ subscribeId: 0n, sequence: seq++ });
        const bytes = new Uint8Array(header.length + size);
        bytes.set(header);
        bytes.set(body, header.length);
        try {
          const turn = turns?.wait();
          if (turn) await turn;
          const s = await session.openUni();
          const w = s.writable.getWriter();
          await w.write(bytes);
          await w.close();
        } catch {
          closed = true;
        }
      }
    };
    for (let k = 0; k < IN_FLIGHT; k++) void loop();
  }
  console.log(JSON.stringify({ port: server.addr.port }));
  // "profile S FILE": a CPU profile of S seconds, for comparing with the relay's.
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    for (const cmd of line.split("\n")) {
      const [verb, secs, file] = cmd.split(" ");
      if (verb !== "profile") continue;
      await Deno.writeTextFile(file!, await cpuProfile(Number(secs)));
      console.log(JSON.stringify({ profile: file }));
    }
  }
  await new Promise(() => {});
}

// ------------------------------------------------------------------ funnel listener

/** Child: the funnel's listener worker, fed committed records at `rate`/s on "rate R". */
async function listenerRole(): Promise<void> {
  const dir = values.dir;
  const listener = await startWorkerListener({
    hostname: "127.0.0.1",
    port: 0,
    certPem: await Deno.readTextFile(`${dir}/cert.pem`),
    keyPem: await Deno.readTextFile(`${dir}/key.pem`),
    verifier: undefined,
    cors: SAME_ORIGIN_ONLY,
    log: { debug() {}, info() {}, warn() {}, error() {} },
  });
  const path = parseTrackPath(`${BROADCAST}/${TRACK}`);
  const payload = JSON.stringify("x".repeat(Math.max(0, size - 2)));
  let seq = 0;
  const entry = (): LedgerEntry => ({
    epoch: 1,
    seq: seq++,
    wallclock: BigInt(Date.now()) * 1_000_000n,
    payload,
  });
  listener.trackCreated(path, undefined);
  listener.committed(path, [entry()]);
  console.log(JSON.stringify({ port: listener.addr.port }));
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    for (const cmd of line.split("\n")) {
      if (cmd.startsWith("rate ")) {
        const [rate, tick] = cmd.slice(5).split(" ").map(Number);
        pace(rate!, tick!, () => listener.committed(path, [entry()]));
      }
    }
  }
}

/**
 * Calls `write` `rate` times a second, in ticks of `tick` ms: at 1 ms the
 * groups arrive almost one by one, at 10 ms in bursts of a tick's worth.
 */
function pace(rate: number, tick: number, write: () => void): () => void {
  const t0 = performance.now();
  let done = 0;
  const id = setInterval(() => {
    const due = Math.floor((performance.now() - t0) * rate / 1000);
    for (; done < due; done++) write();
  }, tick);
  return () => clearInterval(id);
}

// ------------------------------------------------------------------ bench

interface Child {
  readonly proc: Deno.ChildProcess;
  /** Next JSON line from stdout. */
  line(): Promise<Record<string, unknown>>;
  send(cmd: string): Promise<void>;
  kill(): Promise<void>;
}

const children = new Set<Child>();

function spawn(args: string[]): Child {
  console.error(`  starting ${args.join(" ")}`);
  const proc = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SELF, ...args],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = proc.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const writer = proc.stdin.getWriter();
  const child: Child = {
    proc,
    async line() {
      for (;;) {
        const nl = buffered.indexOf("\n");
        if (nl >= 0) {
          const l = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (l.startsWith("{")) return JSON.parse(l);
          continue;
        }
        const { value, done } = await lines.read();
        if (done) throw new Error(`child ${args.join(" ")} ended`);
        buffered += value;
      }
    },
    async send(cmd) {
      await writer.write(new TextEncoder().encode(cmd + "\n"));
    },
    async kill() {
      try {
        proc.kill("SIGKILL");
      } catch {
        // gone
      }
      await proc.status;
      children.delete(child);
    },
  };
  children.add(child);
  return child;
}

interface Result {
  readonly perSecond: number;
  /** Length of the measured window, s. */
  readonly seconds: number;
  /** Cores busy over the window (CPU seconds per second): sender, receivers, late, this process. */
  readonly cpu: { sender: number; receivers: number; late: number; bench: number };
  /** UDP datagrams sent on this machine over the window, and those dropped for a full receive buffer. */
  readonly udp: { sent: number; dropped: number };
  readonly sessions: number[];
  readonly skips: number[];
  readonly late: number[];
  readonly failed: number;
}

async function measure(
  senderPid: number,
  receivers: Child,
  lateReceivers: Child | undefined,
  seconds: number,
  start: () => void | Promise<void>,
  during?: () => Promise<void>,
): Promise<Result> {
  const ready = await receivers.line();
  if (lateReceivers) await lateReceivers.line();
  console.error(`  receivers ready (${ready.failed} failed)`);
  // Delivery starts once every session is set up, so setting them up does not compete with it.
  await start();
  await sleep(Number(values.warmup) * 1000); // warm-up
  await receivers.send("snap");
  const a = await receivers.line() as unknown as Snap;
  const pids = [senderPid, receivers.proc.pid, lateReceivers?.proc.pid ?? NaN, Deno.pid];
  const ticks0 = pids.map(cpuTicks);
  const udp0 = udpCounters();
  if (lateReceivers) {
    await lateReceivers.send("go");
    await lateReceivers.send("late");
  }
  const alongside = during?.();
  await sleep(seconds * 1000);
  await alongside;
  await receivers.send("snap");
  const b = await receivers.line() as unknown as Snap;
  const udp1 = udpCounters();
  const [sender, steadyCpu, lateCpu, bench] = pids.map((pid, i) =>
    (cpuTicks(pid) - ticks0[i]!) / CLOCK_TICKS_PER_SECOND / ((b.at - a.at) / 1000)
  );
  // Sessions that connected during the run get up to 10 s more to finish their setup.
  let late: number[] = [];
  for (let t = 0; lateReceivers && t <= 20; t++) {
    await lateReceivers.send("snap");
    late = (await lateReceivers.line() as unknown as Snap).lateSetup;
    if (!late.some((x) => x < 0)) break;
    await sleep(500);
  }
  const dt = (b.at - a.at) / 1000;
  const n = a.groups.length;
  const rates = b.groups.slice(0, n).map((g, i) => (g - (a.groups[i] ?? 0)) / dt);
  const sessions = rates.filter((_, i) => b.ok[i]);
  // Groups sent after the first snapshot that never arrived: the span of sequences minus arrivals.
  const skips = b.highest.slice(0, n).map((h, i) =>
    Math.max(0, h - (a.highest[i] ?? 0) - (b.groups[i]! - (a.groups[i] ?? 0)))
  ).filter((_, i) => b.ok[i]);
  return {
    perSecond: rates.reduce((x, y) => x + y, 0),
    seconds: dt,
    cpu: { sender: sender!, receivers: steadyCpu!, late: lateCpu!, bench: bench! },
    udp: { sent: udp1.sent - udp0.sent, dropped: udp1.dropped - udp0.dropped },
    sessions,
    skips,
    late,
    failed: Number(ready.failed ?? 0),
  };
}

// Of unsorted `xs`; 0 when there are none.
function quantileOf(xs: number[], q: number): number {
  return xs.length === 0 ? 0 : quantile([...xs].sort((a, b) => a - b), q);
}

async function benchRole(): Promise<void> {
  const ns = values.n.split(",").map(Number);
  const transports = values.transport.split(",") as Transport[];
  const only = new Set(values.only.split(","));
  const seconds = Number(values.seconds);
  const overload = values.overload;
  const cert = await generateDevCertificate();
  const dir = await Deno.makeTempDir({ prefix: "sluice-fanout-" });
  await Deno.writeTextFile(`${dir}/cert.pem`, cert.certPem);
  await Deno.writeTextFile(`${dir}/key.pem`, cert.keyPem);
  const hash = btoa(String.fromCharCode(...cert.sha256));
  const mesh = await benchMesh();
  // Drops at a full socket buffer shape the result: say what this host gives a socket.
  const udp = readUdpReceiveBuffers();
  console.log(
    udp
      ? `UDP receive buffer: net.core.rmem_default ${udp.defaultBytes}, rmem_max ${udp.maxBytes}` +
        (udpReceiveBufferAdvice(udp)
          ? ` (below the relay's recommended ${RECOMMENDED_UDP_RECEIVE_BUFFER})`
          : "")
      : "UDP receive buffer: not readable on this host",
  );
  const meshHash = btoa(String.fromCharCode(...mesh.cert.sha256));
  const rows: string[] = [];
  const report = (label: string, r: Result, raw: number) => {
    const median = quantileOf(r.sessions, 0.5);
    const min = Math.min(...r.sessions);
    const skipTotal = r.skips.reduce((a, b) => a + b, 0);
    let line = `${label.padEnd(34)} ${r.perSecond.toFixed(0).padStart(8)} groups/s  ratio ${
      (r.perSecond / raw).toFixed(2)
    }`;
    if (r.failed) line += `  (${r.failed} sessions failed to start)`;
    // On a machine where senders and receivers share the cores, a sender that
    // costs more per group also leaves the receivers less: CPU shows which.
    const c = r.cpu;
    line += `\n    cores busy: sender ${c.sender.toFixed(2)}, receivers ${c.receivers.toFixed(2)}` +
      (Number.isNaN(c.late) ? "" : `, late receivers ${c.late.toFixed(2)}`) +
      `, this process ${c.bench.toFixed(2)}; sender ${
        (c.sender * 1e6 / Math.max(r.perSecond, 1)).toFixed(1)
      } µs CPU per group delivered`;
    const groups = r.perSecond * r.seconds;
    line +=
      `\n    UDP: ${
        (r.udp.sent / Math.max(groups, 1)).toFixed(2)
      } datagrams per group delivered, ` +
      `${r.udp.dropped} dropped for a full receive buffer`;
    if (overload) {
      line += `\n    per session groups/s min ${min.toFixed(0)} / median ${
        median.toFixed(0)
      } / max ${Math.max(...r.sessions).toFixed(0)} (median/min ${
        min > 0 ? (median / min).toFixed(1) : "∞: a session got nothing"
      })`;
      if (skipTotal > 0) {
        line += `; skips ${skipTotal}, per session min ${Math.min(...r.skips)} / median ${
          quantileOf(r.skips, 0.5)
        } / max ${Math.max(...r.skips)}`;
      }
      if (r.late.length > 0) {
        const done = r.late.filter((t) => t >= 0);
        line +=
          `\n    sessions connecting during the run: ${done.length}/${r.late.length} set up ` +
          `within 10 s of the window's end` +
          (done.length
            ? `, setup p50 ${quantileOf(done, 0.5).toFixed(0)} ms max ${
              Math.max(...done).toFixed(0)
            } ms`
            : "");
      }
    }
    console.log(line);
    rows.push(line);
  };
  try {
    for (const transport of transports) {
      for (const n of ns) {
        const late = overload ? Math.max(5, Math.round(n / 10)) : 0;
        // The N steady sessions in one process; with --overload the late ones in another, so
        // their setup time is the sender's, not that of a process busy receiving.
        const spawnReceivers = (
          port: number,
          kind: string,
          h: string,
          count: number,
          more: number,
        ) =>
          spawn([
            "--role=receivers",
            `--transport=${transport}`,
            `--port=${port}`,
            `--hash=${h}`,
            `--n=${count}`,
            `--kind=${kind}`,
            `--late=${more}`,
          ]);
        const recv = (port: number, kind: string, h: string) => {
          const steady = spawnReceivers(port, kind, h, n, 0);
          const lateOnes = late > 0 ? spawnReceivers(port, kind, h, 0, late) : undefined;
          return {
            steady,
            late: lateOnes,
            kill: async () => {
              await steady.kill();
              await lateOnes?.kill();
            },
          };
        };
        console.log(`\n${transport}, ${n} subscribers, ${size} B groups, ${seconds} s:`);
        // The bare sender, with or without delivery turns, measured against the same receivers.
        const runRaw = async (turns: boolean): Promise<Result> => {
          const sender = spawn([
            "--role=raw-sender",
            `--dir=${dir}`,
            `--size=${size}`,
            ...(turns ? ["--turns"] : []),
          ]);
          const { port } = await sender.line();
          const rr = recv(Number(port), "raw", hash);
          const profile = values.profile && !turns
            ? async () => {
              const file = `${values.profile}/raw-${transport}-${n}.cpuprofile`;
              await sender.send(`profile ${seconds} ${file}`);
              await sender.line();
              console.error(`  raw sender profile: ${file}`);
            }
            : undefined;
          const r = await measure(
            sender.proc.pid,
            rr.steady,
            rr.late,
            seconds,
            () => rr.steady.send("go"),
            profile,
          );
          await rr.kill();
          await sender.kill();
          return r;
        };
        // 1. raw ceiling
        const raw = await runRaw(false);
        report("raw streams (ceiling)", raw, raw.perSecond);
        if (only.has("raw-turns")) {
          report("raw streams, in turns", await runRaw(true), raw.perSecond);
        }
        // Offer more than the ceiling allows, so delivery is the sender's limit.
        // (--offer sets it per subscriber instead, where the bare sender is not a ceiling.)
        const rate = values.offer ? Number(values.offer) : Math.ceil(raw.perSecond / n * 1.5);
        const tick = Number(values.tick);
        if (only.has("relay")) {
          const name = `fanout-${transport}-${n}`;
          const relay = await mesh.relay(name, [], values.profile ? { RELAY_PPROF: "1" } : {});
          const track = new TrackProducer({ cache: 64 });
          const publisher = await relay.dial({
            maxGroupQueue: 64,
            serve: (r) => (r.path === BROADCAST && r.track === TRACK ? track : "not-found"),
          });
          publisher.announce(BROADCAST);
          const body = new Uint8Array(size).fill(7);
          let seq = 0;
          track.writeGroup(seq++, body);
          const rcv = recv(relay.port, "moq", meshHash);
          let stopPace = () => {};
          const startPace = () =>
            void (stopPace = pace(rate, tick, () => track.writeGroup(seq++, body)));
          const profile = values.profile
            ? async () => {
              const file = `${values.profile}/${name}.cpuprofile`;
              await Deno.writeTextFile(file, await relay.profile(seconds));
              console.error(`  relay profile: ${file}`);
            }
            : undefined;
          const r = await measure(
            relay.child.pid,
            rcv.steady,
            rcv.late,
            seconds,
            startPace,
            profile,
          );
          stopPace();
          await rcv.kill();
          publisher.close();
          await relay.stop();
          report(`relay (offered ${rate}/s per sub)`, r, raw.perSecond);
        }
        if (only.has("listener")) {
          const child = spawn(["--role=listener", `--dir=${dir}`, `--size=${size}`]);
          const { port } = await child.line();
          const rcv = recv(Number(port), "moq", hash);
          const r = await measure(
            child.proc.pid,
            rcv.steady,
            rcv.late,
            seconds,
            () => child.send(`rate ${rate} ${tick}`),
          );
          await rcv.kill();
          await child.kill();
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

switch (values.role) {
  case "receivers":
    await receiversRole();
    break;
  case "raw-sender":
    await rawSenderRole();
    break;
  case "listener":
    await listenerRole();
    break;
  default:
    await benchRole();
}
