// Durable Streams served by two funnel processes on one PostgreSQL ledger keep the protocol's
// promises whichever funnel a request reaches: a stream closed through one is closed for the
// other (protocol appends and /tracks/ POSTs alike), a producer's retry sent to the other funnel
// is answered as a duplicate, a Stream-Seq regression is refused there, two PUTs at once create
// the stream once, and producers appending through both funnels while one is SIGKILLed and
// restarted get every acknowledged append stored exactly once. Real processes (`deno run
// src/cli.ts funnel`), shipped defaults, no relay.
import assert from "node:assert/strict";
import { sleep } from "../../src/timers/mod.ts";
import { testCertificateFiles } from "../support/certs.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { type FunnelProcess, startFunnelProcess } from "./_replicas.ts";

const pgUrl = await findPostgres();
const JSON_TYPE = { "content-type": "application/json" };

/**
 * Two funnel processes on a fresh table; `fn` runs with them (and a way to start one again in
 * the same slot), and everything is removed after.
 */
async function withTwoFunnels(
  fn: (funnels: FunnelProcess[], restart: (i: number) => Promise<void>) => Promise<void>,
): Promise<void> {
  const table = freshTableName();
  const ledger = `${pgUrl}?table=${table}`;
  const files = await testCertificateFiles();
  const funnels: FunnelProcess[] = [];
  const restart = async (i: number) => {
    funnels[i] = await startFunnelProcess(ledger, undefined, files);
  };
  try {
    funnels.push(await startFunnelProcess(ledger, undefined, files));
    funnels.push(await startFunnelProcess(ledger, undefined, files));
    await fn(funnels, restart);
  } catch (e) {
    for (const f of funnels) console.error(`--- funnel\n${f.process.lines.join("\n")}`);
    throw e;
  } finally {
    for (const f of funnels) await f.kill();
    await Deno.remove(files.dir, { recursive: true });
    await dropTable(pgUrl!, table);
  }
}

/** A request to a stream on one funnel; the body is read (or dropped) before it returns. */
async function call(
  f: FunnelProcess,
  name: string,
  method: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${f.base}/v1/stream/${name}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Every message of a JSON stream, read through `f` from the start until up to date. */
async function readAll(f: FunnelProcess, name: string): Promise<unknown[]> {
  const out: unknown[] = [];
  let offset = "-1";
  for (;;) {
    const res = await fetch(`${f.base}/v1/stream/${name}?offset=${offset}`);
    assert.equal(res.status, 200, await res.clone().text());
    out.push(...await res.json() as unknown[]);
    offset = res.headers.get("stream-next-offset")!;
    if (res.headers.get("stream-up-to-date") === "true") return out;
  }
}

function producer(id: string, epoch: number, seq: number): Record<string, string> {
  return {
    ...JSON_TYPE,
    "producer-id": id,
    "producer-epoch": String(epoch),
    "producer-seq": String(seq),
  };
}

const needsPostgres = ignoreWithout("PostgreSQL", postgresMissing(pgUrl));

Deno.test({
  name: "a stream closed through one funnel refuses appends and /tracks/ POSTs through the other",
  ignore: needsPostgres,
  fn: () =>
    withTwoFunnels(async ([a, b]) => {
      assert.equal((await call(a!, "closing", "PUT", JSON_TYPE)).status, 201);
      assert.equal((await call(a!, "closing", "POST", JSON_TYPE, `{"n":1}`)).status, 204);
      // B reads the stream before it is closed, as a funnel serving its readers would.
      assert.equal((await call(b!, "closing", "HEAD")).status, 200);
      const closed = await call(a!, "closing", "POST", { "stream-closed": "true" });
      assert.equal(closed.status, 204);
      const late = await call(b!, "closing", "POST", JSON_TYPE, `{"n":2}`);
      assert.equal(late.status, 409, "an append through B after A closed the stream");
      assert.equal(late.headers.get("stream-closed"), "true");
      const tracks = await fetch(`${b!.base}/tracks/closing/stream`, {
        method: "POST",
        headers: JSON_TYPE,
        body: `{"n":3}`,
      });
      assert.equal(tracks.status, 409, "a /tracks/ POST through B to the closed stream");
      assert.equal(tracks.headers.get("stream-closed"), "true");
      await tracks.body?.cancel();
      // Closing again through B is the protocol's idempotent close: 204, nothing stored.
      assert.equal((await call(b!, "closing", "POST", { "stream-closed": "true" })).status, 204);
      assert.deepEqual(await readAll(b!, "closing"), [{ n: 1 }]);
      assert.equal((await call(b!, "closing", "HEAD")).headers.get("stream-closed"), "true");
    }),
});

Deno.test({
  name:
    "a producer's append retried through the other funnel is a duplicate; its epoch fences there",
  ignore: needsPostgres,
  fn: () =>
    withTwoFunnels(async ([a, b]) => {
      assert.equal((await call(a!, "retry", "PUT", JSON_TYPE)).status, 201);
      assert.equal((await call(b!, "retry", "HEAD")).status, 200);
      assert.equal((await call(a!, "retry", "POST", producer("w", 0, 0), `{"s":0}`)).status, 200);
      const again = await call(b!, "retry", "POST", producer("w", 0, 0), `{"s":0}`);
      assert.equal(again.status, 204, "the retry through B is a duplicate");
      assert.equal(again.headers.get("producer-seq"), "0");
      assert.equal((await call(b!, "retry", "POST", producer("w", 0, 1), `{"s":1}`)).status, 200);
      // The retry of seq 1 through A is a duplicate too; an older epoch through A is fenced.
      assert.equal((await call(a!, "retry", "POST", producer("w", 0, 1), `{"s":1}`)).status, 204);
      assert.equal((await call(b!, "retry", "POST", producer("w", 1, 0), `{"e":1}`)).status, 200);
      const fenced = await call(a!, "retry", "POST", producer("w", 0, 2), `{"s":2}`);
      assert.equal(fenced.status, 403, "epoch 0 after epoch 1 began through the other funnel");
      assert.deepEqual(await readAll(a!, "retry"), [{ s: 0 }, { s: 1 }, { e: 1 }]);
    }),
});

Deno.test({
  name: "Stream-Seq must increase across two funnels",
  ignore: needsPostgres,
  fn: () =>
    withTwoFunnels(async ([a, b]) => {
      assert.equal((await call(a!, "seq", "PUT", JSON_TYPE)).status, 201);
      assert.equal((await call(b!, "seq", "HEAD")).status, 200);
      const seq = (s: string) => ({ ...JSON_TYPE, "stream-seq": s });
      assert.equal((await call(a!, "seq", "POST", seq("0002"), `{"q":2}`)).status, 204);
      const back = await call(b!, "seq", "POST", seq("0001"), `{"q":1}`);
      assert.equal(back.status, 409, "a Stream-Seq regression through B");
      assert.equal((await call(b!, "seq", "POST", seq("0003"), `{"q":3}`)).status, 204);
      assert.deepEqual(await readAll(a!, "seq"), [{ q: 2 }, { q: 3 }]);
    }),
});

Deno.test({
  name: "two funnels creating one stream at the same moment create it once",
  ignore: needsPostgres,
  fn: () =>
    withTwoFunnels(async ([a, b]) => {
      const names = Array.from({ length: 10 }, (_, i) => `made-${i}`);
      const answers = await Promise.all(names.map((name) =>
        Promise.all([
          call(a!, name, "PUT", { "content-type": "text/plain" }),
          call(b!, name, "PUT", { "content-type": "application/octet-stream" }),
        ])
      ));
      for (const [i, [fromA, fromB]] of answers.entries()) {
        const statuses = [fromA.status, fromB.status].sort();
        assert.deepEqual(statuses, [201, 409], `${names[i]}: one creation, one conflict`);
        const history = await fetch(`${a!.base}/tracks/${names[i]}/stream?limit=10`);
        const records = (await history.json()).records as { meta?: { create?: unknown } }[];
        assert.equal(records.filter((r) => r.meta?.create).length, 1, "one creating entry");
      }
    }),
});

/** Producers appending through both funnels at once, each one append at a time. */
const PRODUCERS = 4;
const PAUSE_MS = 20;

Deno.test({
  name:
    "producers appending through two funnels, one SIGKILLed and restarted: every acknowledged append once",
  ignore: needsPostgres,
  fn: () =>
    withTwoFunnels(async (funnels, restart) => {
      const name = "busy";
      assert.equal((await call(funnels[0]!, name, "PUT", JSON_TYPE)).status, 201);
      const acked = new Map<number, number>(); // producer -> highest acknowledged seq
      const statuses = new Map<number, number>();
      let duplicatesStored = 0;
      let unreachable = 0;
      let posting = true;
      const append = async (f: number, p: number, s: number): Promise<number> => {
        try {
          const res = await call(
            funnels[f % 2]!,
            name,
            "POST",
            producer(`p${p}`, 0, s),
            JSON.stringify({ p, s }),
          );
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          return res.status;
        } catch {
          unreachable++;
          return 0; // the funnel is down (killed): the client retries on the other
        }
      };
      const run = async (p: number) => {
        for (let s = 0; posting; s++) {
          // A failed attempt is retried with the same producer seq through the other funnel.
          for (let attempt = 0;; attempt++) {
            const status = await append(p + s + attempt, p, s);
            if (status === 200 || status === 204) break;
            assert.ok(attempt < 200, `producer ${p} seq ${s}: no funnel took it (last ${status})`);
            await sleep(50);
          }
          acked.set(p, s);
          if (s % 5 === 0) {
            // The same append again through the other funnel: it must not be stored again.
            const status = await append(p + s + 1, p, s);
            if (status === 200) duplicatesStored++;
          }
          await sleep(PAUSE_MS);
        }
      };
      const producers = Array.from({ length: PRODUCERS }, (_, p) => run(p));
      await sleep(1500);
      // SIGKILL the funnel process itself while producers are writing through it.
      await funnels[0]!.kill();
      await sleep(1500);
      await restart(0);
      await sleep(1500);
      posting = false;
      await Promise.all(producers);

      const [first, second] = await Promise.all([
        readAll(funnels[0]!, name),
        readAll(funnels[1]!, name),
      ]);
      assert.deepEqual(first, second, "both funnels read the same stream");
      const seen = new Map<number, number[]>();
      for (const m of first as { p: number; s: number }[]) {
        const list = seen.get(m.p) ?? [];
        list.push(m.s);
        seen.set(m.p, list);
      }
      console.log(
        `streams active-active: ${first.length} appends stored, acknowledged up to ${
          JSON.stringify(Object.fromEntries(acked))
        }, answers ${JSON.stringify(Object.fromEntries(statuses))}, ${unreachable} not answered`,
      );
      for (let p = 0; p < PRODUCERS; p++) {
        const last = acked.get(p) ?? -1;
        assert.ok(last >= 10, `producer ${p} got through (${last + 1} appends)`);
        const want = Array.from({ length: last + 1 }, (_, s) => s);
        assert.deepEqual(seen.get(p), want, `producer ${p}: each acknowledged seq once, in order`);
      }
      assert.equal(duplicatesStored, 0, "a duplicate through the other funnel answered 200");
      assert.ok(unreachable > 0, "requests met the killed funnel, and were retried on the other");
      for (const status of statuses.keys()) {
        assert.ok([200, 204, 503].includes(status), `unexpected answer ${status}`);
      }
    }),
});
