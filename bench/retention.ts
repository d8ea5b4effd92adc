/**
 * Retention and compaction passes at scale, on one track written straight
 * into the ledger first (so the figures are the pass alone):
 *
 * - `--policy count` (default): N records (100,000, ~100-byte payloads) cut
 *   to the newest 1,000 by `count=1000`; records removed per second, then a
 *   second pass with nothing left to remove (the steady-state cost per track).
 * - `--policy compact`: N records (1,000,000, ~60-byte payloads) round robin
 *   over K keys (1,000) compacted by `compact=device`; the pass's time and
 *   records removed per second, what history keeps, what a reader of the
 *   commit feed was handed (as live subscribers are), and a second pass.
 *
 * - `--policy tracks`: N tracks (100,000) of one record each, and the pass
 *   a funnel runs over them (its Durable Streams expiry included) right after
 *   a restart (a fresh ledger, nothing open): each pass's time, the ledger's
 *   open tracks and the process's resident memory after it. `--rule none`
 *   (default: no policy, as shipped) or `--rule age` (`age=30d` for every
 *   track: each is read, nothing removed). Run with `--v8-flags=--expose-gc`
 *   for the heap a pass leaves. `--keep DIR` seeds the directory
 *   ledger under DIR and the PostgreSQL table `retention_tracks_<N>` once and
 *   leaves them for the next run (before/after from one seeding).
 *
 *   deno run -A bench/retention.ts [--policy count|compact|tracks] [--records N] [--keys K]
 *     [--backends memory,directory,postgres,s3] [--tracks N --rule none|age --passes P --keep DIR]
 *
 * Backends by default: directory and PostgreSQL for `count`, memory as well
 * for `compact`. The directory uses 1 MiB segments (as shipped); PostgreSQL
 * comes from SLUICE_TEST_PG_URL or 127.0.0.1:5432/test (skipped if absent);
 * S3 is an in-process s3rver.
 */
import { benchArgs } from "./support/args.ts";
import { pinsStream, StreamExpiry } from "../src/durable_streams/mod.ts";
import { parseTrackPath } from "../src/path/mod.ts";
import {
  DirectoryBackend,
  Ledger,
  type LedgerBackend,
  loadPostgresBackend,
  MemoryBackend,
  openBackend,
  parseLedgerUri,
  Retention,
  RETENTION_STEP,
  type TrackLedger,
} from "../src/ledger/mod.ts";
import { dropTable, findPostgres, freshTableName } from "../tests/support/postgres.ts";
import { startS3rver } from "../tests/support/s3rver.ts";

const USAGE =
  "deno run -A bench/retention.ts [--policy count|compact|tracks] [--records N] [--keys K] " +
  "[--backends memory,directory,postgres,s3] [--tracks N --rule none|age --passes P --keep DIR]";
const { values } = benchArgs({
  policy: { type: "string", default: "count" },
  records: { type: "string" },
  keys: { type: "string", default: "1000" },
  backends: { type: "string" },
  tracks: { type: "string", default: "100000" },
  rule: { type: "string", default: "none" },
  passes: { type: "string", default: "3" },
  keep: { type: "string" },
}, { usage: USAGE });
const compact = values.policy === "compact";
if (values.policy === "tracks") {
  await manyTracks();
  Deno.exit(0);
}
if (!compact && values.policy !== "count") throw new TypeError(`Unknown policy: ${USAGE}`);
const records = Number(values.records ?? (compact ? 1_000_000 : 100_000));
const keys = Number(values.keys);
const backends = values.backends ?? (compact ? "memory,directory,postgres" : "directory,postgres");
const KEEP = 1000;
const PATH = { broadcast: ["bench"], track: values.policy };

/** Appends N records, 1,024 in flight. */
async function fill(track: TrackLedger, payloadOf: (i: number) => string): Promise<number> {
  const start = performance.now();
  for (let done = 0; done < records; done += 1024) {
    const n = Math.min(1024, records - done);
    await Promise.all(
      Array.from({ length: n }, (_, i) => track.append({ payload: payloadOf(done + i) })),
    );
  }
  return (performance.now() - start) / 1000;
}

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const value = await f();
  return [value, performance.now() - start];
}

async function trimCount(name: string, ledger: Ledger, track: TrackLedger): Promise<void> {
  const payload = JSON.stringify({ text: "r".repeat(88) });
  await fill(track, () => payload);
  const retention = new Retention(ledger, { config: { default: { maxCount: KEEP }, rules: [] } });
  // One pass removes at most RETENTION_STEP records per track: run until none are left.
  let removed = 0;
  let passes = 0;
  const [, ms] = await timed(async () => {
    while (true) {
      const report = await retention.pass();
      passes++;
      if (!report || report.removed === 0) break;
      removed += report.removed;
    }
  });
  const seconds = ms / 1000;
  const [, idleMs] = await timed(() => retention.pass());
  console.log(
    `${name}: removed ${removed} of ${records} in ${seconds.toFixed(2)} s ` +
      `(${Math.round(removed / seconds)} records/s, ${passes} passes of at most ` +
      `${RETENTION_STEP}); first available ${await track.first()}; ` +
      `a pass with nothing to remove ${idleMs.toFixed(1)} ms`,
  );
}

async function compactKeys(
  name: string,
  ledger: Ledger,
  track: TrackLedger,
  live: () => number,
): Promise<void> {
  const fillSeconds = await fill(
    track,
    (i) => JSON.stringify({ device: `d${i % keys}`, reading: i }),
  );
  const retention = new Retention(ledger, {
    config: { default: { compactKey: "device" }, rules: [] },
  });
  const [report, ms] = await timed(async () => (await retention.pass())!);
  const seconds = ms / 1000;
  const [, idleMs] = await timed(() => retention.pass());
  const history = (await Array.fromAsync(track.entries({}))).length;
  console.log(
    `${name}: ${records} records over ${keys} keys (written in ${fillSeconds.toFixed(1)} s); ` +
      `one pass removed ${report.compacted} in ${seconds.toFixed(2)} s ` +
      `(${Math.round(report.compacted / seconds)} records/s); history keeps ${history}; ` +
      `the commit feed's reader told of ${live()}; a second pass ${idleMs.toFixed(1)} ms`,
  );
}

async function measure(name: string, backend: LedgerBackend): Promise<void> {
  let live = 0;
  const ledger = new Ledger(backend, { deadlineMs: 0 });
  ledger.commits.subscribe({ committed: (_path, entries) => void (live += entries.length) });
  try {
    const track = (await ledger.track(PATH, true))!;
    if (compact) await compactKeys(name, ledger, track, () => live);
    else await trimCount(name, ledger, track);
  } finally {
    await ledger.close();
  }
}

for (const name of backends.split(",")) {
  if (name === "memory") {
    await measure(name, new MemoryBackend());
  } else if (name === "directory") {
    const dir = await Deno.makeTempDir({ prefix: "sluice-retention-bench-" });
    try {
      await measure(name, await DirectoryBackend.open(dir));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  } else if (name === "postgres") {
    const url = await findPostgres();
    if (!url) continue;
    const table = freshTableName();
    try {
      const { PostgresBackend } = await loadPostgresBackend();
      await measure(name, await PostgresBackend.open(url, table));
    } finally {
      await dropTable(url, table);
    }
  } else if (name === "s3") {
    const s3 = await startS3rver();
    try {
      await measure(name, await openBackend(parseLedgerUri(s3.ledgerUri("bench")), s3.credentials));
    } finally {
      await s3.stop();
    }
  } else {
    throw new TypeError(`Unknown backend "${name}": ${USAGE}`);
  }
}

/** `--policy tracks`: the pass over N one-record tracks, right after a restart. */
async function manyTracks(): Promise<void> {
  const tracks = Number(values.tracks);
  const passes = Number(values.passes);
  if (values.rule !== "none" && values.rule !== "age") throw new TypeError(USAGE);
  const config = values.rule === "age"
    ? { default: { maxAgeMs: 30 * 86_400_000 }, rules: [] }
    : { default: {}, rules: [] };
  for (const name of (values.backends ?? "directory,postgres").split(",")) {
    let uri: string;
    let cleanup: () => Promise<void>;
    if (name === "directory") {
      const dir = values.keep
        ? `${values.keep}/retention-tracks-${tracks}`
        : await Deno.makeTempDir({ prefix: "sluice-retention-bench-" });
      uri = `file://${dir}`;
      cleanup = () => values.keep ? Promise.resolve() : Deno.remove(dir, { recursive: true });
    } else if (name === "postgres") {
      const url = await findPostgres();
      if (!url) continue;
      const table = values.keep ? `retention_tracks_${tracks}` : freshTableName();
      uri = `${url}?table=${table}`;
      cleanup = () => values.keep ? Promise.resolve() : dropTable(url, table);
    } else {
      throw new TypeError(`Unknown backend "${name}" for --policy tracks: directory or postgres`);
    }
    try {
      await seedTracks(name, uri, tracks);
      // A restarted funnel's ledger: nothing open, the pass as the funnel runs it.
      const ledger = new Ledger(await openBackend(parseLedgerUri(uri)));
      try {
        const retention = new Retention(ledger, {
          config,
          pins: (entry) => pinsStream(entry.meta),
          expire: new StreamExpiry(() => Date.now()),
        });
        for (let pass = 1; pass <= passes; pass++) {
          const [report, ms] = await timed(() => retention.pass());
          // With --v8-flags=--expose-gc the heap figure is what the pass left, not its garbage.
          (globalThis as { gc?: () => void }).gc?.();
          const { rss, heapUsed } = Deno.memoryUsage();
          const load = Deno.loadavg().map((l) => l.toFixed(1)).join(" ");
          console.log(
            `${name}, ${tracks} tracks, rule ${values.rule}: pass ${pass} ${
              (ms / 1000).toFixed(2)
            } s (${report?.tracks ?? "-"} looked at, ${report?.removed ?? "-"} removed); ` +
              `open tracks ${ledger.openTracks}, resident ${mib(rss)} MiB, heap ${mib(heapUsed)} ` +
              `MiB; load ${load}`,
          );
        }
      } finally {
        await ledger.close();
      }
    } finally {
      await cleanup();
    }
  }
}

function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}

/** One record into each of the tracks `many/t<i>` the ledger lacks, 64 tracks at a time. */
async function seedTracks(name: string, uri: string, tracks: number): Promise<void> {
  const ledger = new Ledger(await openBackend(parseLedgerUri(uri)), { deadlineMs: 0 });
  try {
    const have = (await ledger.tracks()).length;
    if (have >= tracks) return;
    const start = performance.now();
    let next = have;
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (next < tracks) {
        const i = next++;
        const track = await ledger.track(parseTrackPath(`many/t${i}`), true);
        await track!.append({ payload: JSON.stringify({ i }) });
      }
    }));
    const seconds = (performance.now() - start) / 1000;
    console.log(`${name}: seeded ${tracks - have} tracks in ${seconds.toFixed(1)} s`);
  } finally {
    await ledger.close();
  }
}
