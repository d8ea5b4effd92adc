/**
 * Catch-up from the start of a long track (100,000 records by default) on the
 * directory and PostgreSQL ledgers, three ways a feed can read it:
 *
 * 1. the ledger stream in this process (`entryStream`, pages of 256), with the
 *    heap and RSS high-water it costs, next to reading every entry into one
 *    array first;
 * 2. HTTP forward paging from the funnel (`GET ?after=…&limit=200` until no
 *    cursor), the funnel in its own process;
 * 3. FETCH of every group, one group per FETCH with 16 in flight, from the
 *    funnel's own MoQ listener (its worker asks the main thread's ledger);
 * 4. the client's feed (`openFeed`, from the start), which pages forward over
 *    HTTP while subscribed to the listener; once it has caught up, `--live`
 *    records are posted one at a time, each timed from its POST until the
 *    feed hands it over.
 *
 * For the funnel it reports its RSS and peak RSS (VmRSS, VmHWM) after start
 * and after each catch-up. Records are written straight into the ledger before the funnel
 * starts, so the figures are reads only.
 *
 *   deno run -A --v8-flags=--expose-gc bench/ledger_catchup.ts [--records 100000]
 *     [--backends directory,postgres] [--fetch-inflight 16] [--live 300]
 *
 * With --expose-gc the heap figures are live memory at the samples (every 2000
 * entries); without it they include garbage not yet collected.
 *
 * PostgreSQL comes from SLUICE_TEST_PG_URL or 127.0.0.1:5432/test (skipped if absent).
 */
import { benchArgs } from "./support/args.ts";
import { generateDevCertificate } from "../src/certs/mod.ts";
import { type FeedRecord, openFeed, post } from "../src/client/mod.ts";
import {
  DirectoryBackend,
  entryStream,
  type LedgerBackend,
  type LedgerEntry,
  type TrackPath,
} from "../src/ledger/mod.ts";
import { loadPostgresBackend } from "../src/ledger/mod.ts";
import { connect, VERSIONS } from "../src/moq/mod.ts";
import { connectQuicSession } from "../src/transport/mod.ts";
import { dropTable, findPostgres, freshTableName } from "../tests/support/postgres.ts";
import { startServer } from "../tests/support/processes.ts";

const { values } = benchArgs({
  records: { type: "string", default: "100000" },
  backends: { type: "string", default: "directory,postgres" },
  "fetch-inflight": { type: "string", default: "16" },
  live: { type: "string", default: "300" },
});
const RECORDS = Number(values.records);
const INFLIGHT = Number(values["fetch-inflight"]);
const LIVE = Number(values.live);
const CLI = new URL("../src/cli.ts", import.meta.url).pathname;
const TRACK: TrackPath = { broadcast: ["bench", "catchup"], track: "chat" };
const MIB = 1024 * 1024;

/** Writes RECORDS chat-sized records in batches of 1000, straight through the backend. */
async function fill(backend: LedgerBackend): Promise<void> {
  const track = (await backend.openTrack(TRACK, true))!;
  const start = 1_800_000_000_000_000_000n;
  for (let first = 0; first < RECORDS; first += 1000) {
    const batch: LedgerEntry[] = [];
    for (let seq = first; seq < Math.min(RECORDS, first + 1000); seq++) {
      batch.push({
        epoch: 1,
        seq,
        wallclock: start + BigInt(seq) * 1000n,
        sender: `user-${seq % 50}`,
        payload: JSON.stringify({ text: `message number ${seq}, about chat-sized`, n: seq }),
      });
    }
    await track.append(batch);
  }
}

/**
 * Reads the whole track in this process, through the stream or (`collect`)
 * into one array: records/s of a plain pass, then the memory a second pass
 * holds at its high-water, sampled every 2000 entries.
 */
async function inProcess(open: () => Promise<LedgerBackend>, collect: boolean) {
  const backend = await open();
  try {
    const track = (await backend.openTrack(TRACK, false))!;
    const read = async (every: () => void): Promise<number> => {
      const stream = entryStream(track, {}, { pageSize: 256 });
      let n = 0;
      if (collect) {
        const all = await Array.fromAsync(stream);
        every();
        return all.length;
      }
      for await (const _ of stream) if (++n % 2000 === 0) every();
      return n;
    };
    const t0 = performance.now();
    const n = await read(() => {});
    const perSecond = n / ((performance.now() - t0) / 1000);
    // With --v8-flags=--expose-gc each sample is the live heap, not garbage awaiting collection.
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const base = Deno.memoryUsage();
    let heapPeak = base.heapUsed;
    let rssPeak = base.rss;
    await read(() => {
      gc?.();
      const m = Deno.memoryUsage();
      heapPeak = Math.max(heapPeak, m.heapUsed);
      rssPeak = Math.max(rssPeak, m.rss);
    });
    return {
      perSecond,
      heapMiB: (heapPeak - base.heapUsed) / MIB,
      rssMiB: (rssPeak - base.rss) / MIB,
    };
  } finally {
    await backend.close();
  }
}

interface Funnel {
  readonly base: string;
  readonly moqPort: number;
  /** Peak RSS (VmHWM) and current RSS (VmRSS) of the funnel process, MiB. */
  rss(): Promise<{ peak: number; now: number }>;
  stop(): Promise<void>;
}

async function startFunnel(env: Record<string, string>): Promise<Funnel> {
  const funnel = await startServer("funnel", { env, clearEnv: true, cli: CLI });
  const text = funnel.lines.join("\n");
  return {
    base: /Ingest: (\S+)/.exec(text)![1]!,
    moqPort: Number(/Serve: moqt:\/\/[^:]+:(\d+)/.exec(text)![1]),
    async rss() {
      const status = await Deno.readTextFile(`/proc/${funnel.pid}/status`);
      const kib = (field: string) =>
        Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
      return { peak: kib("VmHWM") / 1024, now: kib("VmRSS") / 1024 };
    },
    async stop() {
      await funnel.stop();
    },
  };
}

/** Follows `after` cursors from the first record to the newest; records/s. */
async function httpCatchUp(base: string): Promise<number> {
  const t0 = performance.now();
  let after: string | undefined = "e000000-g00000000";
  let n = 0;
  while (after !== undefined) {
    const response = await fetch(`${base}/tracks/bench/catchup/chat?limit=200&after=${after}`);
    const page = await response.json() as { records: unknown[]; after?: string };
    n += page.records.length;
    after = page.after;
  }
  if (n !== RECORDS) throw new Error(`HTTP paging returned ${n} of ${RECORDS} records`);
  return n / ((performance.now() - t0) / 1000);
}

/** FETCHes groups 1..RECORDS with INFLIGHT at once; records/s. */
async function fetchCatchUp(port: number, certPem: string): Promise<number> {
  const session = await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
    alpn: VERSIONS,
    caCerts: [certPem],
  });
  const moq = await connect(session);
  try {
    let next = 1;
    let got = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: INFLIGHT }, async () => {
      while (next <= RECORDS) {
        const group = await moq.fetch("bench/catchup", "chat", next++);
        got += group.frames.length;
      }
    }));
    if (got !== RECORDS) throw new Error(`FETCH returned ${got} of ${RECORDS} records`);
    return got / ((performance.now() - t0) / 1000);
  } finally {
    moq.close(0, "");
  }
}

/**
 * The client's feed from the start: records/s of its catch-up, then the
 * POST-to-feed latency (p50, p99 in ms) of LIVE records posted one at a time.
 */
async function feedCatchUp(
  base: string,
  port: number,
): Promise<{ perSecond: number; p50: number; p99: number }> {
  const track = `${base}/tracks/bench/catchup/chat`;
  const feed = openFeed({
    track,
    moq: `moqt://localhost:${port}/`,
    from: "start",
    serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
  });
  const it = feed[Symbol.asyncIterator]();
  const next = async () => (await it.next()).value as FeedRecord;
  try {
    const t0 = performance.now();
    for (let n = 0; n < RECORDS; n++) await next();
    const perSecond = RECORDS / ((performance.now() - t0) / 1000);
    const latencies: number[] = [];
    for (let n = 0; n < LIVE; n++) {
      const sent = performance.now();
      const [committed, record] = await Promise.all([post(track, { n }), next()]);
      if (record.group !== committed.group) throw new Error(`Feed out of step at ${record.group}`);
      latencies.push(performance.now() - sent);
    }
    latencies.sort((a, b) => a - b);
    const at = (p: number) => latencies[Math.min(LIVE - 1, Math.floor(LIVE * p))] ?? NaN;
    return { perSecond, p50: at(0.5), p99: at(0.99) };
  } finally {
    feed.close();
    await feed.closed;
  }
}

const scratch = await Deno.makeTempDir({ prefix: "sluice-catchup-" });
const cert = await generateDevCertificate();
await Deno.writeTextFile(`${scratch}/cert.pem`, cert.certPem);
await Deno.writeTextFile(`${scratch}/key.pem`, cert.keyPem);

async function measure(
  name: string,
  open: () => Promise<LedgerBackend>,
  ledgerUri: string,
): Promise<void> {
  const t0 = performance.now();
  const writer = await open();
  await fill(writer);
  await writer.close();
  console.log(
    `\n${name}: ${RECORDS} records written in ${((performance.now() - t0) / 1000).toFixed(2)} s`,
  );
  const streamed = await inProcess(open, false);
  const collected = await inProcess(open, true);
  const row = (label: string, r: typeof streamed) =>
    console.log(
      `  ${label.padEnd(34)} ${r.perSecond.toFixed(0).padStart(8)} records/s   heap +${
        r.heapMiB.toFixed(1)
      } MiB   rss +${r.rssMiB.toFixed(1)} MiB`,
    );
  row("ledger stream (pages of 256)", streamed);
  row("same, every entry into one array", collected);

  const funnel = await startFunnel({
    FUNNEL_ADDR: "127.0.0.1:0",
    FUNNEL_SERVE_ADDR: "127.0.0.1:0",
    CERT_FILE: `${scratch}/cert.pem`,
    KEY_FILE: `${scratch}/key.pem`,
    LEDGER_URI: ledgerUri,
  });
  try {
    const idle = await funnel.rss();
    const http = await httpCatchUp(funnel.base);
    const afterHttp = await funnel.rss();
    const fetched = await fetchCatchUp(funnel.moqPort, cert.certPem);
    const afterFetch = await funnel.rss();
    const fed = await feedCatchUp(funnel.base, funnel.moqPort);
    console.log(
      `  ${"HTTP ?after paging (limit 200)".padEnd(34)} ${http.toFixed(0).padStart(8)} records/s`,
    );
    console.log(
      `  ${`FETCH per group (${INFLIGHT} in flight)`.padEnd(34)} ${
        fetched.toFixed(0).padStart(8)
      } records/s`,
    );
    console.log(
      `  ${"client feed (openFeed, from start)".padEnd(34)} ${
        fed.perSecond.toFixed(0).padStart(8)
      } records/s   then live POST→feed p50 ${fed.p50.toFixed(1)} ms, p99 ${
        fed.p99.toFixed(1)
      } ms (${LIVE} records)`,
    );
    const mib = (r: { peak: number; now: number }) =>
      `${r.now.toFixed(0)} MiB (peak ${r.peak.toFixed(0)})`;
    console.log(
      `  funnel RSS: ${mib(idle)} started, ${mib(afterHttp)} after HTTP, ${
        mib(afterFetch)
      } after FETCH`,
    );
  } finally {
    await funnel.stop();
  }
}

const wanted = new Set(values.backends.split(","));
console.log(
  `Catch-up of ${RECORDS} records from the start, ${navigator.hardwareConcurrency} cores, ` +
    `load average ${Deno.loadavg().map((l) => l.toFixed(1)).join(" ")}`,
);
try {
  if (wanted.has("directory")) {
    const dir = `${scratch}/ledger`;
    await measure("directory", () => DirectoryBackend.open(dir), `file://${dir}`);
  }
  if (wanted.has("postgres")) {
    const pg = await findPostgres();
    if (pg) {
      const table = freshTableName();
      const url = new URL(pg);
      url.searchParams.set("table", table);
      try {
        await measure(
          "postgres",
          async () => (await loadPostgresBackend()).PostgresBackend.open(pg, table),
          url.href,
        );
      } finally {
        await dropTable(pg, table);
      }
    } else console.log("\npostgres: skipped (no server)");
  }
} finally {
  await Deno.remove(scratch, { recursive: true });
}
