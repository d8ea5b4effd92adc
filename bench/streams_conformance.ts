/**
 * The Durable Streams conformance suite (npm, pinned in
 * tests/durable_streams/_conformance.ts) against sluice's funnel on each ledger
 * backend, one after another, and against the protocol's reference server
 * (npm `@durable-streams/server`, in-memory) in the same run: passed,
 * failed and skipped, and every failure's test. Single runs, no retries.
 *
 * `deno run -A bench/streams_conformance.ts [--backends memory,directory,postgres,s3] [--reference true]`
 *
 * @module
 */
import { benchArgs } from "./support/args.ts";
import { loadFunnelConfig } from "../src/config/mod.ts";
import { startFunnel } from "../src/funnel/mod.ts";
import { silentLogger } from "../src/log/mod.ts";
import { dropTable, findPostgres, freshTableName } from "../tests/support/postgres.ts";
import { startS3rver } from "../tests/support/s3rver.ts";
import { type ConformanceResult, runConformance } from "../tests/durable_streams/_conformance.ts";

const { values } = benchArgs({
  backends: { type: "string", default: "memory,directory,postgres,s3" },
  reference: { type: "string", default: "true" },
});
const NPM_DIR = new URL("../.data/npm/durable-streams-server/", import.meta.url).pathname;

async function onFunnel(backend: string): Promise<ConformanceResult[]> {
  const env: Record<string, string> = { FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none" };
  const cleanup: Array<() => Promise<void>> = [];
  if (backend === "directory") {
    const dir = await Deno.makeTempDir();
    env.LEDGER_URI = `file://${dir}`;
    cleanup.push(() => Deno.remove(dir, { recursive: true }));
  } else if (backend === "postgres") {
    const url = await findPostgres();
    if (!url) throw new Error("No PostgreSQL at 127.0.0.1:5432 (or SLUICE_TEST_PG_URL)");
    const table = freshTableName();
    env.LEDGER_URI = `${url}?table=${table}`;
    cleanup.push(() => dropTable(url, table));
  } else if (backend === "s3") {
    const s3 = await startS3rver();
    env.LEDGER_URI = s3.ledgerUri("conformance");
    env.AWS_ACCESS_KEY_ID = s3.credentials.accessKeyId;
    env.AWS_SECRET_ACCESS_KEY = s3.credentials.secretAccessKey;
    cleanup.push(() => s3.stop());
  }
  const funnel = await startFunnel(loadFunnelConfig(env), { log: silentLogger });
  try {
    return await runConformance(`http://127.0.0.1:${funnel.addr.port}`, backend);
  } finally {
    await funnel.stop();
    for (const f of cleanup) await f();
  }
}

async function onReference(): Promise<ConformanceResult[]> {
  const pkg = JSON.stringify({
    private: true,
    type: "module",
    dependencies: { "@durable-streams/server": "0.3.7" },
  });
  if ((await Deno.readTextFile(`${NPM_DIR}package.json`).catch(() => "")) !== pkg) {
    await Deno.mkdir(NPM_DIR, { recursive: true });
    await Deno.writeTextFile(`${NPM_DIR}package.json`, pkg);
    const out = await new Deno.Command("npm", { args: ["install"], cwd: NPM_DIR }).output();
    if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  }
  await Deno.writeTextFile(
    `${NPM_DIR}server.mjs`,
    `import { DurableStreamTestServer } from "@durable-streams/server";\n` +
      `const s = new DurableStreamTestServer({ port: 0, host: "127.0.0.1" });\n` +
      `console.log("listening " + new URL(await s.start()).port);\n`,
  );
  const child = new Deno.Command("node", { args: ["server.mjs"], cwd: NPM_DIR, stdout: "piped" })
    .spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!/listening (\d+)/.test(text)) text += (await reader.read()).value ?? "";
  const port = /listening (\d+)/.exec(text)![1];
  try {
    return await runConformance(`http://127.0.0.1:${port}`, "reference");
  } finally {
    child.kill("SIGTERM");
    await child.status;
  }
}

const rows: [string, ConformanceResult[]][] = [];
for (const backend of values.backends.split(",")) {
  rows.push([`sluice funnel, ${backend}`, await onFunnel(backend)]);
}
if (values.reference === "true") rows.push(["reference server, memory", await onReference()]);
console.log("| server | passed | failed | skipped |\n| --- | --- | --- | --- |");
for (const [name, results] of rows) {
  const n = (s: string) => results.filter((r) => r.status === s).length;
  console.log(`| ${name} | ${n("passed")} | ${n("failed")} | ${n("skipped")} |`);
}
for (const [name, results] of rows) {
  for (const r of results.filter((r) => r.status === "failed")) {
    console.log(`${name}: failed ${r.name} (${r.message})`);
  }
}
