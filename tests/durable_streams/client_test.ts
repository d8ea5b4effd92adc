// A stream end to end: @durable-streams/client follows it live over SSE while
// appends arrive through the protocol and through /tracks/, a MoQ subscriber
// gets one group per append, and /tracks/ history reads the same records.
import assert from "node:assert/strict";
import { DurableStream, stream } from "@durable-streams/client";
import { dialOurs } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { post, startLiveFunnel, take } from "../support/live_funnel.ts";
import { until, within } from "../support/wait.ts";

Deno.test("@durable-streams/client follows a JSON stream live; MoQ gets one group per append; /tracks/ reads it", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  const url = `${f.base}/v1/stream/chat/room`;
  const handle = await DurableStream.create({ url, contentType: "application/json" });
  await handle.append(JSON.stringify({ n: 1 }));

  const moq = await dialOurs(f.moqPort);
  const sub = moq.subscribe("chat", "room");
  // The subscription starts at the newest group, the first append (group 2, after the group
  // that created the stream); waiting for it means the subscription is set up before more come.
  const first = await within(take(sub, 1), 5000, "the newest group");
  const items: unknown[] = [];
  const res = await stream<{ n: number }>({ url, offset: "-1", live: "sse" });
  const stop = res.subscribeJson((batch) => {
    items.push(...batch.items);
  });
  try {
    // Two messages in one POST are one append, one group; a /tracks/ record is one message.
    const batch = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `[{"n":2},{"n":3}]`,
    });
    assert.equal(batch.status, 204);
    assert.equal((await post(f.base, "chat/room", `{"n":4}`)).status, 201);
    await until(() => items.length === 4, "four items followed live");
    assert.deepEqual(items, [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);

    const groups = [...first, ...await within(take(sub, 2), 5000, "two more groups")];
    assert.deepEqual(groups.map((g) => g.seq), [2, 3, 4]);
    assert.deepEqual(JSON.parse(groups[0]!.frame), { payload: { n: 1 } });
    assert.deepEqual(JSON.parse(groups[1]!.frame), {
      payload: [{ n: 2 }, { n: 3 }],
      meta: { n: 2 },
    });
    assert.deepEqual(JSON.parse(groups[2]!.frame), { payload: { n: 4 } });

    const history = await (await fetch(`${f.base}/tracks/chat/room?limit=10`)).json();
    assert.deepEqual(
      history.records.map((r: { payload?: unknown }) => r.payload),
      [undefined, { n: 1 }, [{ n: 2 }, { n: 3 }], { n: 4 }],
    );
    // The first group created the stream: its configuration, no payload.
    assert.deepEqual(history.records[0].meta, { create: { type: "application/json" } });
  } finally {
    stop();
    res.cancel();
    await moq.close();
  }
});

Deno.test("A byte stream is stored as bytes: protocol reads are exact, /tracks/ shows them as base64", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  const url = `${f.base}/v1/stream/files/blob`;
  const bytes = Uint8Array.from({ length: 300 }, (_, i) => i % 256);
  const put = await fetch(url, {
    method: "PUT",
    headers: { "content-type": "application/octet-stream" },
    body: bytes.subarray(0, 100),
  });
  assert.equal(put.status, 201);
  const appended = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: bytes.subarray(100),
  });
  assert.equal(appended.status, 204);
  const read = await fetch(url);
  assert.deepEqual(new Uint8Array(await read.arrayBuffer()), bytes);
  // The second append's offset is after group 2: the offset names the group sequence.
  assert.equal(appended.headers.get("stream-next-offset"), "0000000000000001_0000000000000002");
  const history = await (await fetch(`${f.base}/tracks/files/blob?limit=10`)).json();
  assert.equal(history.records[1].bytes, bytes.subarray(100).toBase64());
  assert.equal(history.records[0].meta.create.type, "application/octet-stream");
});

Deno.test("A funnel track is a JSON stream, and the protocol's offsets follow its groups", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  for (let i = 1; i <= 3; i++) await post(f.base, "room/1/chat", `{"text":"m${i}"}`);
  const first = await fetch(`${f.base}/v1/stream/room/1/chat?offset=-1`);
  assert.equal(first.headers.get("content-type"), "application/json");
  assert.deepEqual(await first.json(), [{ text: "m1" }, { text: "m2" }, { text: "m3" }]);
  assert.equal(first.headers.get("stream-next-offset"), "0000000000000001_0000000000000003");
  const after = await fetch(
    `${f.base}/v1/stream/room/1/chat?offset=0000000000000001_0000000000000002`,
  );
  assert.deepEqual(await after.json(), [{ text: "m3" }]);
});
