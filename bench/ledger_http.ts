/**
 * POST throughput and latency of the real funnel over each ledger backend, with
 * 64 concurrent keep-alive senders into one track: memory, directory, PostgreSQL
 * and S3 (in-process s3rver) in the same run. The funnel runs in its own process;
 * wrk drives the load when installed, else a raw-TCP Deno client.
 *
 *   deno run -A bench/ledger_http.ts [--seconds 5] [--connections 64]
 */
import { benchArgs } from "./support/args.ts";
import { dropTable, findPostgres, freshTableName } from "../tests/support/postgres.ts";
import { startS3rver } from "../tests/support/s3rver.ts";
import { loadGeneratorName, postLoad } from "./support/post_load.ts";
import { ingestBase, startServer } from "../tests/support/processes.ts";

const { values } = benchArgs({
  seconds: { type: "string", default: "5" },
  connections: { type: "string", default: "64" },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const PATH = "/tracks/bench/room/chat";
const BODY = '{"kind":"reaction","emoji":"👍","at":1234567890}';

const scratch = await Deno.makeTempDir({ prefix: "sluice-ledger-http-" });

async function measure(name: string, env: Record<string, string>): Promise<void> {
  const process = await startServer("funnel", {
    env: { FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none", ...env },
    clearEnv: true,
  });
  const funnel = { port: Number(new URL(ingestBase(process)).port), stop: () => process.stop() };
  try {
    const load = (secs: number) =>
      postLoad({ port: funnel.port, path: PATH, body: BODY, connections, seconds: secs });
    await load(1);
    const r = await load(seconds);
    console.log(
      `${name.padEnd(10)} ${r.perSecond.toFixed(0).padStart(8)} req/s   p50 ${
        r.p50Ms.toFixed(2).padStart(6)
      } ms   p99 ${r.p99Ms.toFixed(2).padStart(6)} ms   errors ${r.errors}`,
    );
  } finally {
    await funnel.stop();
  }
}

try {
  console.log(
    `POST /tracks/bench/room/chat, ${connections} connections, ${seconds} s each, load by ${loadGeneratorName()}, ${navigator.hardwareConcurrency} cores`,
  );
  await measure("memory", {});
  await measure("directory", { LEDGER_URI: `file://${scratch}/ledger` });
  const pg = await findPostgres();
  if (pg) {
    const table = freshTableName();
    const url = new URL(pg);
    url.searchParams.set("table", table);
    try {
      await measure("postgres", { LEDGER_URI: url.href });
    } finally {
      await dropTable(pg, table);
    }
  }
  const s3 = await startS3rver();
  try {
    await measure("s3", {
      LEDGER_URI: s3.ledgerUri("bench"),
      AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    });
  } finally {
    await s3.stop();
  }
} finally {
  await Deno.remove(scratch, { recursive: true });
}
