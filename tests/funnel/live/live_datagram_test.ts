// FUNNEL_DATAGRAM_TRACKS on the funnel's own MoQ listener: records of a
// named track reach our subscribers as datagrams, other tracks on streams.
// (@moq/net 0.3.4 drops these datagrams: it reads their timestamp as a
// 53-bit number and the funnel's nanosecond commit times are larger; see
// docs/relay.md, Datagram delivery.)
import assert from "node:assert/strict";
import { dialOurs } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until } from "../../support/wait.ts";
import { post, send, startLiveFunnel, take } from "../../support/live_funnel.ts";

Deno.test("Own listener: a FUNNEL_DATAGRAM_TRACKS track's records arrive as datagrams, others on streams", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel({ FUNNEL_DATAGRAM_TRACKS: "room/cursor" });
  assert.equal(await send(f.base, "PUT", "/tracks/room/1/cursor"), 201);
  assert.equal(await send(f.base, "PUT", "/tracks/room/1/chat"), 201);
  const ours = await dialOurs(f.moqPort, { alpn: "moq-lite-05" });
  const wt = await dialOurs(f.moqPort, { webTransport: true });
  try {
    const cursor = ours.subscribe("room/1", "cursor");
    const chat = ours.subscribe("room/1", "chat");
    const wtCursor = wt.subscribe("room/1", "cursor");
    await Promise.all([cursor.ready, chat.ready, wtCursor.ready]);
    const listener = f.funnel.live.listener!;
    await until(
      async () => await listener.subscribers("room/1", "cursor") === 2,
      "two subscribers",
    );
    const bodies = ["1", "2", "3"];
    for (const b of bodies) await post(f.base, "room/1/cursor", `{"x":${b}}`);
    await post(f.base, "room/1/chat", '"hi"');
    const want = bodies.map((b, i) => ({ seq: i + 1, frame: `{"payload":{"x":${b}}}` }));
    assert.deepEqual(await take(cursor, 3), want);
    assert.deepEqual(await take(wtCursor, 3), want);
    assert.deepEqual(await take(chat, 1), [{ seq: 1, frame: '{"payload":"hi"}' }]);
    assert.equal(ours.stats.datagramsReceived, 3, "the cursor records, not the chat one");
    assert.equal(wt.stats.datagramsReceived, 3);
  } finally {
    ours.close(0, "");
    wt.close(0, "");
  }
});
