/**
 * POST → MoQ subscriber latency of the funnel over loopback: records are
 * POSTed at a fixed rate (default 1000/s) into one track while N subscribers
 * (default 100, native QUIC moq-lite-05) receive them, either straight from
 * the funnel's own listener or through `sluice relay`. Each payload carries
 * its send time; a subscriber's latency is receive time − send time (both
 * processes read the same system clock).
 *
 * The funnel, the relay and the subscribers each run in their own process;
 * the poster runs in this one.
 *
 *   deno run -A bench/funnel_live.ts [--via listener|relay|both] [--rate 1000]
 *     [--subscribers 100] [--seconds 10] [--warmup 2]
 */
import { benchArgs } from "./support/args.ts";
import { generateDevCertificate } from "../src/certs/mod.ts";
import { connect, type MoqSession, VERSIONS } from "../src/moq/mod.ts";
import { connectQuicSession } from "../src/transport/mod.ts";
import { freeUdpTcpPort } from "../src/transport/mod.ts";
import { sleep } from "../src/timers/mod.ts";
import { ingestBase, type ServerProcess, startServer } from "../tests/support/processes.ts";

const { values } = benchArgs({
  via: { type: "string", default: "both" },
  rate: { type: "string", default: "1000" },
  subscribers: { type: "string", default: "100" },
  seconds: { type: "string", default: "10" },
  warmup: { type: "string", default: "2" },
  role: { type: "string", default: "bench" },
  port: { type: "string", default: "0" },
  cert: { type: "string", default: "" },
});

const SELF = new URL(import.meta.url).pathname;
const nowMs = (): number => performance.timeOrigin + performance.now();

if (values.role === "subscribers") await subscriberRole();
else await benchRole();

// ---------------------------------------------------------------- subscribers

/** Child process: N sessions subscribe to bench/live "records" and report latencies. */
async function subscriberRole(): Promise<void> {
  const port = Number(values.port);
  const n = Number(values.subscribers);
  const certPem = await Deno.readTextFile(values.cert);
  const decoder = new TextDecoder();
  const sessions: MoqSession[] = [];
  // Every record's number and latency; the measured window is cut at report
  // time, so a record that overtakes the "measure" command is still counted.
  const seen: { n: number; latency: number }[] = [];
  let firstMeasured = Infinity;
  const ready: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const session = await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
      alpn: VERSIONS,
      caCerts: [certPem],
    });
    const moq = await connect(session);
    sessions.push(moq);
    ready.push((async () => {
      for (;;) {
        const sub = moq.subscribe("bench/live", "records");
        try {
          await sub.ready;
        } catch {
          await sleep(50); // not announced on the relay yet
          continue;
        }
        (async () => {
          for await (const group of sub) {
            const text = decoder.decode(group.frames[0]);
            const m = /"t":([0-9.]+),"n":(\d+)/.exec(text);
            const t = Number(m?.[1]);
            seen.push({ n: Number(m?.[2]), latency: nowMs() - t });
          }
        })().catch(() => {});
        return;
      }
    })());
  }
  await Promise.all(ready);
  console.log("READY");
  // Commands on stdin: "measure N" samples records from N on, "report" prints and exits.
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    const measure = /measure (\d+)/.exec(line);
    if (measure) firstMeasured = Number(measure[1]);
    if (line.includes("report")) {
      const samples = seen.filter((r) => r.n >= firstMeasured).map((r) => r.latency);
      console.log(
        `REPORT ${JSON.stringify({ received: samples.length, samples: summarize(samples) })}`,
      );
      for (const s of sessions) s.close(0, "");
      return;
    }
  }
}

function summarize(samples: number[]): { n: number; p50: number; p99: number; max: number } {
  const sorted = Float64Array.from(samples).sort();
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? NaN };
}

// ---------------------------------------------------------------- bench

interface Child {
  child: Deno.ChildProcess;
  lines: string[];
  waitFor(re: RegExp): Promise<RegExpExecArray>;
  write(text: string): Promise<void>;
  stop(): Promise<void>;
}

function spawn(args: string[], env: Record<string, string>, stdin = false): Child {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env,
    stdin: stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  let wake = () => {};
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
      lines.push(...chunk.split("\n"));
      wake();
    }
  };
  const done = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const writer = stdin ? child.stdin.getWriter() : undefined;
  return {
    child,
    lines,
    async waitFor(re) {
      for (;;) {
        for (const l of lines) {
          const m = re.exec(l);
          if (m) return m;
        }
        const changed = new Promise<void>((r) => (wake = r));
        const exited = child.status.then(() => "exited" as const);
        if ((await Promise.race([changed, exited])) === "exited") {
          await done;
          for (const l of lines) {
            const m = re.exec(l);
            if (m) return m;
          }
          throw new Error(`Process exited before ${re}:\n${lines.join("\n")}`);
        }
      }
    },
    write: async (text) => {
      await writer?.write(new TextEncoder().encode(text));
    },
    async stop() {
      try {
        await writer?.close();
      } catch { /* closed */ }
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
      await done;
    },
  };
}

async function run(via: "listener" | "relay", dir: string): Promise<void> {
  const rate = Number(values.rate);
  const n = Number(values.subscribers);
  const seconds = Number(values.seconds);
  const warmup = Number(values.warmup);
  const cert = `${dir}/cert.pem`;
  const children: Child[] = [];
  const servers: ServerProcess[] = [];
  try {
    let moqPort: number;
    const funnelEnv: Record<string, string> = {
      FUNNEL_ADDR: "127.0.0.1:0",
      CERT_FILE: cert,
      KEY_FILE: `${dir}/key.pem`,
    };
    if (via === "relay") {
      moqPort = freeUdpTcpPort();
      const relay = await startServer("relay", {
        flags: "all",
        env: { RELAY_ADDR: `127.0.0.1:${moqPort}`, CERT_FILE: cert, KEY_FILE: `${dir}/key.pem` },
      });
      servers.push(relay);
      funnelEnv.RELAY_URL = `moqt://localhost:${moqPort}/`;
      funnelEnv.RELAY_CA_FILE = cert;
    } else {
      funnelEnv.FUNNEL_SERVE_ADDR = "127.0.0.1:0";
    }
    const funnel = await startServer("funnel", { flags: "all", env: funnelEnv });
    servers.push(funnel);
    const ingest = ingestBase(funnel);
    if (via === "listener") {
      moqPort = Number(
        /Serve: moqt:\/\/[^:]+:(\d+)/.exec(await funnel.waitForLine("Serve: moqt://"))![1],
      );
    } else await funnel.waitForLine(/Relay .*: connected/);
    const put = await fetch(`${ingest}/tracks/bench/live/records`, { method: "PUT" });
    await put.body?.cancel();

    const subs = spawn(
      [
        "run",
        "-A",
        SELF,
        "--role",
        "subscribers",
        "--port",
        String(moqPort!),
        "--subscribers",
        String(n),
        "--cert",
        cert,
      ],
      {},
      true,
    );
    children.push(subs);
    await subs.waitFor(/^READY/);

    // Post at a steady rate: each tick sends whatever is due by now.
    const total = Math.round(rate * (warmup + seconds));
    const start = nowMs();
    let sent = 0;
    let failed = 0;
    const failures = new Map<string, number>();
    const fail = (why: string) => {
      failed++;
      failures.set(why, (failures.get(why) ?? 0) + 1);
    };
    const inflight = new Set<Promise<void>>();
    let measuring = false;
    let firstMeasured = total + 1;
    const postTimes: number[] = [];
    while (sent < total) {
      const due = Math.min(total, Math.floor((nowMs() - start) * rate / 1000));
      if (!measuring && sent >= rate * warmup) {
        measuring = true;
        firstMeasured = sent + 1;
        await subs.write(`measure ${firstMeasured}\n`);
      }
      while (sent < due) {
        sent++;
        const t0 = nowMs();
        const sampled = measuring;
        const p = fetch(`${ingest}/tracks/bench/live/records`, {
          method: "POST",
          body: `{"t":${t0},"n":${sent}}`,
        }).then(async (r) => {
          if (r.status !== 201) fail(`status ${r.status}`);
          await r.body?.cancel();
          if (sampled) postTimes.push(nowMs() - t0);
        }, (e: unknown) => {
          fail(e instanceof Error ? e.message.slice(0, 80) : String(e));
        });
        inflight.add(p);
        p.finally(() => inflight.delete(p));
      }
      await sleep(1);
    }
    await Promise.all(inflight);
    await sleep(200);
    await subs.write("report\n");
    const report = JSON.parse((await subs.waitFor(/^REPORT (.*)$/))[1]!);
    const expected = (total - firstMeasured + 1) * n;
    const elapsed = (nowMs() - start) / 1000;
    const ms = (v: number | null) => (typeof v === "number" ? `${v.toFixed(2)} ms` : "n/a");
    console.log(
      `${via.padEnd(8)} rate ${rate}/s x ${n} subscribers, ${seconds} s measured: ` +
        `p50 ${ms(report.samples.p50)}, p99 ${ms(report.samples.p99)}, ` +
        `max ${ms(report.samples.max)}; delivered ${report.received}/${expected} ` +
        `(${(100 * report.received / expected).toFixed(1)}%); POST failures ${failed}${
          failed ? ` ${JSON.stringify(Object.fromEntries(failures))}` : ""
        }; ` +
        `achieved ${(sent / elapsed).toFixed(0)} POST/s, POST round trip p50 ${
          ms(summarize(postTimes).p50)
        } p99 ${ms(summarize(postTimes).p99)}`,
    );
  } finally {
    for (const c of children.reverse()) await c.stop();
    for (const p of servers.reverse()) await p.stop();
  }
}

async function benchRole(): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-bench-live-" });
  try {
    const c = await generateDevCertificate();
    await Deno.writeTextFile(`${dir}/cert.pem`, c.certPem);
    await Deno.writeTextFile(`${dir}/key.pem`, c.keyPem);
    const modes = values.via === "both" ? ["listener", "relay"] as const : [values.via] as const;
    for (const via of modes) {
      if (via !== "listener" && via !== "relay") throw new TypeError(`--via "${via}"`);
      try {
        await run(via, dir);
      } catch (e) {
        console.log(`${via.padEnd(8)} failed: ${e instanceof Error ? e.message : e}`);
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
