/**
 * A client feed catching up from the start of a long track, then live: the
 * catch-up's records per second, and how long a record takes from its POST
 * to the feed once caught up, on the directory and PostgreSQL ledgers. The
 * track is written straight into the ledger first; the funnel then runs in
 * its own process and the feed reads it over HTTP and its own MoQ listener.
 *
 *   deno run -A bench/client_catchup.ts [--records 100000] [--live 300]
 */
import { parseArgs } from "node:util";
import { type FeedRecord, openFeed, post } from "../src/client/mod.ts";
import { Ledger, openBackend, parseLedgerUri, parseTrackPath } from "../src/ledger/mod.ts";
import { freeUdpTcpPort } from "../src/transport/free_port.ts";
import { testCertificate, testCertificateFiles } from "../tests/support/certs.ts";
import { dropTable, findPostgres, freshTableName } from "../tests/support/postgres.ts";
import { spawnListening } from "./support/post_load.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    records: { type: "string", default: "100000" },
    live: { type: "string", default: "300" },
  },
});
const RECORDS = Number(values.records);
const LIVE = Number(values.live);
const CLI = new URL("../src/cli.ts", import.meta.url).pathname;
const TRACK = "bench/room/chat";
const BODY = '{"kind":"message","text":"catching up from the start of the track"}';

/** Writes `RECORDS` records into the ledger at `uri`, many commits in flight. */
async function fill(uri: string): Promise<number> {
  const started = performance.now();
  const ledger = new Ledger(await openBackend(parseLedgerUri(uri)));
  const track = (await ledger.track(parseTrackPath(TRACK), true))!;
  for (let n = 0; n < RECORDS; n += 2000) {
    const batch = [];
    for (let k = n; k < Math.min(n + 2000, RECORDS); k++) {
      batch.push(track.append({ payload: BODY }));
    }
    await Promise.all(batch);
  }
  await ledger.backend.close();
  return (performance.now() - started) / 1000;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function measure(name: string, uri: string): Promise<void> {
  const filled = await fill(uri);
  const files = await testCertificateFiles();
  const moqPort = freeUdpTcpPort();
  const funnel = await spawnListening(["run", "-A", CLI, "funnel"], {
    FUNNEL_ADDR: "127.0.0.1:0",
    FUNNEL_SERVE_ADDR: `127.0.0.1:${moqPort}`,
    CERT_FILE: files.cert,
    KEY_FILE: files.key,
    LEDGER_URI: uri,
  }, /Ingest: http:\/\/127\.0\.0\.1:(\d+)/);
  const track = `http://127.0.0.1:${funnel.port}/tracks/${TRACK}`;
  const cert = await testCertificate();
  const feed = openFeed({
    track,
    moq: `moqt://localhost:${moqPort}/`,
    from: "start",
    serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
  });
  try {
    const it = feed[Symbol.asyncIterator]();
    const next = async (): Promise<FeedRecord> => (await it.next()).value as FeedRecord;
    const started = performance.now();
    for (let n = 0; n < RECORDS; n++) await next();
    const catchUp = (performance.now() - started) / 1000;
    // Once caught up: one POST at a time, each timed until the feed hands it over.
    const latencies: number[] = [];
    for (let n = 0; n < LIVE; n++) {
      const sent = performance.now();
      const [committed, record] = await Promise.all([post(track, { n }), next()]);
      if (record.group !== committed.group) throw new Error(`Feed out of step at ${record.group}`);
      latencies.push(performance.now() - sent);
    }
    latencies.sort((a, b) => a - b);
    console.log(
      `${name.padEnd(10)} filled ${RECORDS} in ${filled.toFixed(1)} s; catch-up ${
        (RECORDS / catchUp).toFixed(0).padStart(7)
      } records/s (${catchUp.toFixed(1)} s); live POST→feed p50 ${
        percentile(latencies, 0.5).toFixed(1)
      } ms p99 ${percentile(latencies, 0.99).toFixed(1)} ms (${LIVE} records)`,
    );
  } finally {
    feed.close();
    await feed.closed;
    await funnel.stop();
    await Deno.remove(files.dir, { recursive: true });
  }
}

const scratch = await Deno.makeTempDir({ prefix: "sluice-client-catchup-" });
try {
  console.log(
    `Feed from the start of a ${RECORDS}-record track, then ${LIVE} live records; ${navigator.hardwareConcurrency} cores`,
  );
  await measure("directory", `file://${scratch}/ledger`);
  const pg = await findPostgres();
  if (pg) {
    const table = freshTableName();
    const url = new URL(pg);
    url.searchParams.set("table", table);
    try {
      await measure("postgres", url.href);
    } finally {
      await dropTable(pg, table);
    }
  } else console.log("postgres   skipped (no PostgreSQL found)");
} finally {
  await Deno.remove(scratch, { recursive: true });
}
