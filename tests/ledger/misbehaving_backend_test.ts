// The real funnel over backends that misbehave: a PostgreSQL or S3 endpoint
// that accepts connections and never answers, PostgreSQL connections reset
// under load (what a restart does to them), and a directory ledger whose
// filesystem fills. Requests get 503 with Retry-After within a bounded time,
// nothing acknowledged is lost, nothing half-written is served, and the
// funnel recovers by itself.
import assert from "node:assert/strict";
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { type RunningFunnel, startFunnel } from "../../src/funnel/mod.ts";
import { type LedgerBackend, STORAGE_DEADLINE_MS } from "../../src/ledger/mod.ts";
import { PostgresBackend } from "../../src/ledger/postgres/postgres_backend.ts";
import { S3Backend } from "../../src/ledger/s3/s3_backend.ts";
import { silentLogger } from "../../src/log/mod.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { startS3rver } from "../support/s3rver.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp_proxy.ts";

const pgUrl = await findPostgres();
// A storage deadline of 1 s instead of the shipped 5 s (STORAGE_DEADLINE_MS), so that each case
// waits out a hung backend quickly; the S3 case has a twin at the shipped deadline.
const DEADLINE_MS = 1000;

interface Reply {
  status: number;
  retryAfter: string | null;
  ms: number;
  text: string;
}

async function call(url: string, method: string, body?: string, key?: string): Promise<Reply> {
  const t0 = performance.now();
  const response = await fetch(url, {
    method,
    ...(body === undefined ? {} : { body }),
    ...(key === undefined ? {} : { headers: { "idempotency-key": key } }),
  });
  const text = await response.text();
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    ms: performance.now() - t0,
    text,
  };
}

/**
 * The funnel over `backend`, or over the ledger `env` names, with a short storage deadline
 * (`shipped`: the shipped one).
 */
async function funnelOver(
  backend: LedgerBackend | undefined,
  env: Record<string, string> = {},
  shipped = false,
) {
  return await startFunnel(
    loadFunnelConfig({ FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none", ...env }),
    {
      ...(backend ? { backend } : {}),
      log: silentLogger,
      ...(shipped ? {} : { ledgerDeadlineMs: DEADLINE_MS }),
    },
  );
}

/** Every record's payload, oldest first (following the history pages back). */
const payloads = async (track: string): Promise<unknown[]> => {
  const out: unknown[] = [];
  let before: string | undefined;
  do {
    const r = await call(`${track}?limit=200${before ? `&before=${before}` : ""}`, "GET");
    assert.equal(r.status, 200, r.text);
    const page = JSON.parse(r.text);
    out.unshift(...page.records.map((x: { payload: unknown }) => x.payload));
    before = page.before;
  } while (before !== undefined);
  return out;
};

/** A backend that stops answering: 503 + Retry-After within the deadline, then recovery. */
async function hangs(proxy: TcpProxy, backend: LedgerBackend, shipped = false): Promise<void> {
  const funnel = await funnelOver(backend, {}, shipped);
  const deadlineMs = shipped ? STORAGE_DEADLINE_MS : DEADLINE_MS;
  const track = `http://127.0.0.1:${funnel.addr.port}/tracks/hang/room/chat`;
  try {
    assert.equal((await call(track, "POST", `"before"`)).status, 201);
    proxy.stall();
    for (const [method, body] of [["POST", `"during"`], ["GET", undefined]] as const) {
      const r = await call(track, method, body, method === "POST" ? "k-during" : undefined);
      assert.equal(r.status, 503, `${method}: ${r.text}`);
      assert.ok(r.retryAfter !== null, "Retry-After");
      assert.ok(r.ms < deadlineMs + 1500, `${method} answered after ${r.ms} ms`);
    }
    proxy.restore();
    // Recovery without restart: the stuck connections were dropped at the deadline.
    let back: Reply | undefined;
    for (let i = 0; i < 40 && back?.status !== 201; i++) {
      back = await call(track, "POST", `"during"`, "k-during");
      if (back.status !== 201) await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(back?.status, 201, back?.text);
    assert.equal((await call(track, "POST", `"after"`)).status, 201);
    // The retried record is stored once; nothing else appeared.
    assert.deepEqual(await payloads(track), ["before", "during", "after"]);
  } finally {
    await funnel.stop();
  }
}

Deno.test({
  name:
    "PostgreSQL that accepts connections and never answers: 503 within the deadline, then recovery",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const target = new URL(pgUrl!);
    const proxy = startTcpProxy(target.hostname, Number(target.port || 5432));
    const url = new URL(pgUrl!);
    url.hostname = "127.0.0.1";
    url.port = String(proxy.port);
    const table = freshTableName();
    try {
      await hangs(proxy, await PostgresBackend.open(url.href, table, { connectTimeout: 2 }));
    } finally {
      await proxy.close();
      await dropTable(pgUrl!, table);
    }
  },
});

Deno.test("S3 that accepts connections and never answers: 503 within the deadline, then recovery", async () => {
  const s3 = await startS3rver();
  const proxy = startTcpProxy("127.0.0.1", Number(new URL(s3.endpoint).port));
  try {
    const backend = await S3Backend.open({
      ...s3.backendOptions("hang"),
      endpoint: `http://127.0.0.1:${proxy.port}`,
    });
    await hangs(proxy, backend);
  } finally {
    await proxy.close();
    await s3.stop();
  }
});

Deno.test("S3 that never answers, at the shipped storage deadline: 503 within it, then recovery", async () => {
  const s3 = await startS3rver();
  const proxy = startTcpProxy("127.0.0.1", Number(new URL(s3.endpoint).port));
  try {
    const backend = await S3Backend.open({
      ...s3.backendOptions("hang-shipped"),
      endpoint: `http://127.0.0.1:${proxy.port}`,
    });
    await hangs(proxy, backend, true);
  } finally {
    await proxy.close();
    await s3.stop();
  }
});

Deno.test({
  name: "PostgreSQL connections reset under load: every acknowledged record stays, once, in order",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const target = new URL(pgUrl!);
    const proxy = startTcpProxy(target.hostname, Number(target.port || 5432));
    const url = new URL(pgUrl!);
    url.hostname = "127.0.0.1";
    url.port = String(proxy.port);
    const table = freshTableName();
    let funnel: RunningFunnel | undefined;
    try {
      funnel = await funnelOver(await PostgresBackend.open(url.href, table, { connectTimeout: 2 }));
      const track = `http://127.0.0.1:${funnel.addr.port}/tracks/restart/room/chat`;
      const acked: number[] = [];
      const statuses = new Map<number, number>();
      let n = 0;
      let running = true;
      const sender = async () => {
        while (running) {
          const i = n++;
          const r = await call(track, "POST", JSON.stringify({ i }));
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 201) acked.push(i);
          else {
            assert.equal(r.status, 503, r.text);
            assert.ok(r.retryAfter !== null);
            assert.ok(r.ms < DEADLINE_MS + 1500, `answered after ${r.ms} ms`);
          }
        }
      };
      const senders = Array.from({ length: 4 }, sender);
      // Two restarts' worth of resets while four senders post.
      for (let cycle = 0; cycle < 2; cycle++) {
        await new Promise((r) => setTimeout(r, 400));
        proxy.cut();
        await new Promise((r) => setTimeout(r, 400));
        proxy.restore();
      }
      await new Promise((r) => setTimeout(r, 1500));
      running = false;
      await Promise.all(senders);
      console.log(`answers: ${JSON.stringify(Object.fromEntries(statuses))}`);
      assert.ok((statuses.get(503) ?? 0) > 0, "the resets were felt");
      const stored = (await payloads(track)) as { i: number }[];
      const storedIds = stored.map((p) => p.i);
      assert.equal(new Set(storedIds).size, storedIds.length, "a record was stored twice");
      for (const i of acked) assert.ok(storedIds.includes(i), `acknowledged record ${i} lost`);
      // The last posts went through: recovery without a restart.
      assert.equal((await call(track, "POST", `"after"`)).status, 201);
    } finally {
      await funnel?.stop();
      await proxy.close();
      await dropTable(pgUrl!, table);
    }
  },
});

/** Mounts a small tmpfs at a fresh directory; throws with mount's reason when this user cannot. */
async function mountTmpfs(kib: number): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-full-" });
  const out = await new Deno.Command("mount", {
    args: ["-t", "tmpfs", "-o", `size=${kib}k`, "tmpfs", dir],
    stderr: "piped",
  }).output().catch((e) => ({ success: false, stderr: new TextEncoder().encode(String(e)) }));
  if (out.success) return dir;
  await Deno.remove(dir);
  throw new Error(`cannot mount a tmpfs: ${new TextDecoder().decode(out.stderr).trim()}`);
}

async function unmount(dir: string): Promise<void> {
  await new Deno.Command("umount", { args: [dir] }).output();
  await Deno.remove(dir, { recursive: true });
}

// A full filesystem needs a small one: a tmpfs, which only root (CAP_SYS_ADMIN) may mount.
const tmpfsMissing = await mountTmpfs(64).then(unmount).then(
  () => undefined,
  (e: Error) => e.message,
);
if (tmpfsMissing) console.log(`SKIP directory ledger on a full filesystem: ${tmpfsMissing}`);

Deno.test({
  name:
    "directory ledger on a filesystem that fills: 503, nothing half-written, recovery when space returns",
  ignore: ignoreWithout("tmpfs", tmpfsMissing),
  async fn() {
    const dir = await mountTmpfs(512);
    const filler = `${dir}/filler`;
    const env = { LEDGER_URI: `file://${dir}/ledger` };
    try {
      // Leave about 96 KiB free for the ledger.
      await Deno.writeFile(filler, new Uint8Array(512 * 1024 - 96 * 1024));
      let funnel = await funnelOver(undefined, env);
      let track = `http://127.0.0.1:${funnel.addr.port}/tracks/full/room/chat`;
      const acked: number[] = [];
      let refused = 0;
      const text = "x".repeat(3000);
      for (let i = 0; i < 100 && refused < 3; i++) {
        const r = await call(track, "POST", JSON.stringify({ i, text }));
        if (r.status === 201) acked.push(i);
        else {
          assert.equal(r.status, 503, r.text);
          assert.ok(r.retryAfter !== null, "Retry-After");
          refused++;
        }
      }
      assert.equal(refused, 3, "the filesystem never filled");
      // Reads still work and show exactly what was acknowledged.
      const ids = async () => ((await payloads(track)) as { i: number }[]).map((p) => p.i);
      assert.deepEqual(await ids(), acked);
      // Space returns: the same funnel takes records again, without a restart.
      await Deno.remove(filler);
      const back = await call(track, "POST", JSON.stringify({ i: 1000 }));
      assert.equal(back.status, 201, back.text);
      acked.push(1000);
      assert.deepEqual(await ids(), acked);
      // And from disk, after a restart: every acknowledged record, nothing else.
      await funnel.stop();
      funnel = await funnelOver(undefined, env);
      track = `http://127.0.0.1:${funnel.addr.port}/tracks/full/room/chat`;
      assert.deepEqual(await ids(), acked);
      await funnel.stop();
    } finally {
      await unmount(dir);
    }
  },
});
