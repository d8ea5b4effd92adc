// Records retention removed are gone out loud over HTTP: a history page that would
// start inside the removed stretch answers 410 problem+json naming the track's first
// available group, and the paging cursors stop at it. The funnel runs retention by
// itself when LEDGER_RETENTION is set.
import assert from "node:assert/strict";
import { Retention } from "../../src/ledger/mod.ts";
import { until } from "../support/wait.ts";
import { call, startTestFunnel } from "./_http.ts";

const TRACK = "/tracks/room/1/chat";
const g = (seq: number) => `e000001-g${String(seq).padStart(8, "0")}`;
const payloads = (reply: { json: { records: { payload: number }[] } }) =>
  reply.json.records.map((r) => r.payload);

Deno.test("history of removed records answers 410 with the first available group", async () => {
  await using t = await startTestFunnel();
  for (let i = 0; i < 30; i++) {
    assert.equal((await call(t.base, "POST", TRACK, { body: String(i) })).status, 201);
  }
  const retention = new Retention(t.funnel.ledger, {
    config: { default: { maxCount: 10 }, rules: [] },
  });
  assert.equal((await retention.pass())?.removed, 20);

  const gone = await call(t.base, "GET", `${TRACK}?after=${g(4)}`);
  assert.equal(gone.status, 410);
  assert.equal(gone.headers.get("content-type"), "application/problem+json");
  assert.equal(gone.json.status, 410);
  assert.equal(gone.json.title, "Gone");
  assert.equal(gone.json.first, g(20));
  assert.match(gone.json.detail, /removed by the track's retention/);

  // Right before the first kept record, and from the start: served, nothing skipped.
  const next = await call(t.base, "GET", `${TRACK}?after=${g(19)}`);
  assert.equal(next.status, 200);
  assert.deepEqual(payloads(next), Array.from({ length: 10 }, (_, i) => 20 + i));
  const start = await call(t.base, "GET", `${TRACK}?after=e000000-g00000000&limit=3`);
  assert.deepEqual(payloads(start), [20, 21, 22]);

  // Paging back stops at the first kept record; asking below it is 410 too.
  const newest = await call(t.base, "GET", `${TRACK}?limit=5`);
  assert.deepEqual(payloads(newest), [25, 26, 27, 28, 29]);
  assert.equal(newest.json.before, g(25));
  const oldest = await call(t.base, "GET", `${TRACK}?limit=5&before=${g(25)}`);
  assert.deepEqual(payloads(oldest), [20, 21, 22, 23, 24]);
  assert.equal(oldest.json.before, undefined, "nothing older is kept");
  const below = await call(t.base, "GET", `${TRACK}?before=${g(20)}`);
  assert.equal(below.status, 410);
  assert.equal(below.json.first, g(20));
});

Deno.test("a funnel with LEDGER_RETENTION removes old records by itself and counts them", async () => {
  // One-second passes (the default is a minute) so the test sees one soon.
  await using t = await startTestFunnel({
    LEDGER_RETENTION: "count=5",
    LEDGER_RETENTION_INTERVAL: "1",
  });
  for (let i = 0; i < 12; i++) await call(t.base, "POST", TRACK, { body: String(i) });
  const track = (await t.funnel.ledger.track({ broadcast: ["room", "1"], track: "chat" }, false))!;
  await until(async () => (await track.first()) === 7, "a retention pass");
  const metrics = (await call(t.base, "GET", "/metrics")).text;
  assert.match(metrics, /sluice_funnel_retention_removed_records_total\{backend="memory"\} 7/);
  assert.match(metrics, /sluice_funnel_retention_passes_total\{outcome="done"\} [1-9]/);
  assert.match(metrics, /sluice_funnel_ledger_open_tracks 1\b/);
});

Deno.test("/metrics shows the records and payload bytes the retained tracks store, per backend", async () => {
  await using t = await startTestFunnel({
    LEDGER_RETENTION: "count=5",
    LEDGER_RETENTION_INTERVAL: "1",
  });
  const stored = async (): Promise<[string, string] | undefined> => {
    const text = (await call(t.base, "GET", "/metrics")).text;
    const records = /sluice_funnel_ledger_stored_records\{backend="memory"\} (\d+)/.exec(text);
    const bytes = /sluice_funnel_ledger_stored_bytes\{backend="memory"\} (\d+)/.exec(text);
    return records && bytes ? [records[1]!, bytes[1]!] : undefined;
  };
  for (let i = 0; i < 12; i++) await call(t.base, "POST", TRACK, { body: String(i) });
  for (let i = 0; i < 3; i++) await call(t.base, "POST", "/tracks/room/2/chat", { body: `"ab"` });
  // Kept: "7" to "11" (7 bytes) and three "ab" (12 bytes).
  await until(async () => (await stored())?.join() === "8,19", "a pass that counted");
  for (let i = 12; i < 15; i++) await call(t.base, "POST", TRACK, { body: String(i) });
  // Kept: "10" to "14" (10 bytes): counted on from the last pass, less what it removed.
  await until(async () => (await stored())?.join() === "8,22", "the next pass");
});

Deno.test("a funnel at the shipped default keeps every record", async () => {
  await using t = await startTestFunnel();
  for (let i = 0; i < 12; i++) await call(t.base, "POST", TRACK, { body: String(i) });
  const all = await call(t.base, "GET", `${TRACK}?after=e000000-g00000000`);
  assert.equal(all.json.records.length, 12);
  assert.equal(t.funnel.ledger.backend.name, "memory");
});

Deno.test("a Durable Stream under a retention policy keeps its creation and every record", async () => {
  await using t = await startTestFunnel();
  const url = `${t.base}/v1/stream/logs/app`;
  const created = await fetch(url, {
    method: "PUT",
    headers: { "content-type": "application/json" },
  });
  await created.body?.cancel();
  assert.equal(created.status, 201);
  for (let n = 0; n < 6; n++) {
    const appended = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ n }),
    });
    await appended.body?.cancel();
    assert.equal(appended.status, 204);
  }
  const retention = new Retention(t.funnel.ledger, {
    config: { default: { maxCount: 1 }, rules: [] },
  });
  assert.equal((await retention.pass())?.removed, 0, "the stream's creation stops the cut");
  const read = await fetch(`${url}?offset=-1`);
  assert.equal(read.status, 200);
  assert.deepEqual(await read.json(), [0, 1, 2, 3, 4, 5].map((n) => ({ n })));
});

Deno.test("a Durable Streams read of a track from an offset retention removed answers 410, never a silent skip", async () => {
  await using t = await startTestFunnel();
  for (let i = 0; i < 10; i++) {
    assert.equal((await call(t.base, "POST", TRACK, { body: String(i) })).status, 201);
  }
  const url = `${t.base}/v1/stream/room/1/chat`;
  // A plain track reads as a JSON stream; then retention keeps only the newest three.
  const early = await fetch(`${url}?offset=-1`);
  assert.deepEqual(await early.json(), Array.from({ length: 10 }, (_, i) => i));
  const retention = new Retention(t.funnel.ledger, {
    config: { default: { maxCount: 3 }, rules: [] },
  });
  assert.equal((await retention.pass())?.removed, 7);

  // Position 3 (after the third record): records 3..6 are gone, so each read mode says so.
  const resume = `0000000000000001_${"3".padStart(16, "0")}`;
  for (const live of ["", "&live=long-poll", "&live=sse"]) {
    const gone = await fetch(`${url}?offset=${resume}${live}`);
    const text = await gone.text();
    assert.equal(gone.status, 410, `${live || "catch-up"}: ${text}`);
    assert.match(text, /removed by the track's retention/);
    assert.equal(
      gone.headers.get("stream-next-offset"),
      `0000000000000001_${"7".padStart(16, "0")}`,
    );
  }
  // From the beginning, and from the offset the 410 named: what is kept, nothing skipped silently.
  const start = await fetch(`${url}?offset=-1`);
  assert.deepEqual(await start.json(), [7, 8, 9]);
  const named = await fetch(`${url}?offset=0000000000000001_${"7".padStart(16, "0")}`);
  assert.equal(named.status, 200);
  assert.deepEqual(await named.json(), [7, 8, 9]);
});

Deno.test("a Durable Streams array append to a plain track does not stop its retention", async () => {
  // One-second passes (the default is a minute) so the test sees two soon.
  await using t = await startTestFunnel({
    LEDGER_RETENTION: "count=3",
    LEDGER_RETENTION_INTERVAL: "1",
  });
  for (let i = 0; i < 3; i++) await call(t.base, "POST", TRACK, { body: String(i) });
  // Two messages in one append (a protocol client batching): the entry says how many.
  const batched = await fetch(`${t.base}/v1/stream/room/1/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "[3,4]",
  });
  await batched.body?.cancel();
  assert.equal(batched.status, 204);
  for (let i = 5; i < 11; i++) await call(t.base, "POST", TRACK, { body: String(i) });
  const passes = async () =>
    Number(
      /sluice_funnel_retention_passes_total\{outcome="done"\} (\d+)/.exec(
        (await call(t.base, "GET", "/metrics")).text,
      )?.[1] ?? 0,
    );
  const before = await passes();
  await until(async () => (await passes()) >= before + 2, "two retention passes");
  const track = (await t.funnel.ledger.track({ broadcast: ["room", "1"], track: "chat" }, false))!;
  // Entries 0..9 (the array is one entry): count=3 keeps 7, 8 and 9.
  assert.equal(await track.first(), 7, "the policy's three newest records are what is kept");
  const kept = await call(t.base, "GET", `${TRACK}?after=e000000-g00000000`);
  assert.deepEqual(payloads(kept), [8, 9, 10]);
});

Deno.test("a producer's or a Stream-Seq append to a plain track does not stop its retention", async () => {
  // One-second passes (the default is a minute) so the test sees two soon.
  await using t = await startTestFunnel({
    LEDGER_RETENTION: "count=3",
    LEDGER_RETENTION_INTERVAL: "1",
  });
  const append = async (body: string, headers: Record<string, string>): Promise<void> => {
    const reply = await fetch(`${t.base}/v1/stream/room/1/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
    await reply.body?.cancel();
    assert.ok(reply.status === 200 || reply.status === 204, `append ${body}: ${reply.status}`);
  };
  for (let i = 0; i < 3; i++) await call(t.base, "POST", TRACK, { body: String(i) });
  await append("3", { "producer-id": "p", "producer-epoch": "0", "producer-seq": "0" });
  await append("4", { "stream-seq": "a" });
  for (let i = 5; i < 11; i++) await call(t.base, "POST", TRACK, { body: String(i) });
  const track = (await t.funnel.ledger.track({ broadcast: ["room", "1"], track: "chat" }, false))!;
  // Entries 0..10: count=3 keeps 8, 9 and 10, past the producer's and the Stream-Seq entry.
  await until(async () => (await track.first()) === 8, "retention past the protocol appends");
  const kept = await call(t.base, "GET", `${TRACK}?after=e000000-g00000000`);
  assert.deepEqual(payloads(kept), [8, 9, 10]);
});

Deno.test("a compacted track's history skips superseded records without calling them gone", async () => {
  // One-second passes (the default is a minute) so the test sees one soon.
  await using t = await startTestFunnel({
    LEDGER_RETENTION_RULES: "room: compact=device",
    LEDGER_RETENTION_INTERVAL: "1",
  });
  // 40 records over 4 devices: history keeps the first (0) and the newest of each (36..39).
  for (let i = 0; i < 40; i++) {
    const body = JSON.stringify({ device: `d${i % 4}`, i });
    assert.equal((await call(t.base, "POST", TRACK, { body })).status, 201);
  }
  const track = (await t.funnel.ledger.track({ broadcast: ["room", "1"], track: "chat" }, false))!;
  const kept = async () => (await Array.fromAsync(track.entries({}))).length;
  await until(async () => (await kept()) === 5, "a compaction pass");
  const index = (reply: { json: { records: { payload: { i: number } }[] } }) =>
    reply.json.records.map((r) => r.payload.i);
  const all = await call(t.base, "GET", `${TRACK}?after=e000000-g00000000`);
  assert.deepEqual(index(all), [0, 36, 37, 38, 39]);
  // A cursor inside the compacted stretch reads on from the next kept record: no 410.
  const inside = await call(t.base, "GET", `${TRACK}?after=${g(10)}`);
  assert.equal(inside.status, 200);
  assert.deepEqual(index(inside), [36, 37, 38, 39]);
  const back = await call(t.base, "GET", `${TRACK}?limit=2&before=${g(37)}`);
  assert.deepEqual(index(back), [0, 36]);
  assert.equal(back.json.before, undefined, "nothing older is kept");
  const metrics = (await call(t.base, "GET", "/metrics")).text;
  assert.match(metrics, /sluice_funnel_compacted_records_total\{backend="memory"\} 35/);
});

Deno.test("a funnel keeping everything still removes an expired Durable Stream by itself", async () => {
  // One-second passes (the default is a minute) so the test sees them soon.
  await using t = await startTestFunnel({ LEDGER_RETENTION_INTERVAL: "1" });
  const expires = new Date(Date.now() + 1_000).toISOString();
  const put = await call(t.base, "PUT", "/v1/stream/brief", {
    headers: { "content-type": "text/plain", "stream-expires-at": expires },
    body: "soon gone",
  });
  assert.equal(put.status, 201);
  for (let i = 0; i < 5; i++) {
    const post = await call(t.base, "POST", "/v1/stream/brief", {
      headers: { "content-type": "text/plain" },
      body: `${i}`,
    });
    assert.equal(post.status, 204);
  }
  const track = (await t.funnel.ledger.track({ broadcast: ["brief"], track: "stream" }, false))!;
  // Expired, then kept through one complete pass that began after, then removed.
  await until(async () => (await track.first()) === 6, "the expired stream's removal");
  assert.equal((await call(t.base, "GET", "/v1/stream/brief")).status, 404);
  const metrics = (await call(t.base, "GET", "/metrics")).text;
  assert.match(metrics, /sluice_funnel_retention_removed_records_total\{backend="memory"\} 6/);
  assert.doesNotMatch(metrics, /sluice_funnel_ledger_stored_records\{/, "no policy, no figures");
});
