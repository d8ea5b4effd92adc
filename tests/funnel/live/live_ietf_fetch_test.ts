// An IETF (draft 14) subscriber FETCHes a funnel track's records from the
// funnel's own MoQ listener: a range of records, in order, and a joining
// FETCH of the records before its subscription.
import assert from "node:assert/strict";
import { ietfCodec as c } from "../../../src/moq/mod.ts";
import { rawIetf, readFetchStream } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { post, send, startLiveFunnel } from "../../support/live_funnel.ts";

Deno.test("funnel: a draft-14 FETCH of records from the listener, standalone and joining", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  assert.equal(await send(f.base, "PUT", "/tracks/room/1/chat"), 201);
  for (let i = 1; i <= 5; i++) await post(f.base, "room/1/chat", `"r${i}"`);
  const raw = await rawIetf(f.moqPort);
  try {
    await raw.send(
      c.Msg.Fetch,
      c.encodeFetch({
        requestId: 0n,
        priority: 0,
        groupOrder: 1,
        range: {
          kind: "standalone",
          path: "room/1",
          track: "chat",
          start: { group: 2, object: 0 },
          end: { group: 4 },
        },
      }, 14),
    );
    const ok = await raw.answer(c.Msg.FetchOk, c.Msg.FetchError);
    assert.equal(ok.type, c.Msg.FetchOk);
    assert.deepEqual((await readFetchStream(raw.session, 14)).objects, [
      '2.0 {"payload":"r2"}',
      '3.0 {"payload":"r3"}',
      '4.0 {"payload":"r4"}',
    ]);
    await raw.send(
      c.Msg.Subscribe,
      c.encodeSubscribe({
        requestId: 2n,
        path: "room/1",
        track: "chat",
        priority: 0,
        groupOrder: 0,
        forward: true,
        filter: { kind: "largest-object" },
      }, 14),
    );
    assert.equal(
      (await raw.answer(c.Msg.SubscribeOk, c.Msg.SubscribeError)).type,
      c.Msg.SubscribeOk,
    );
    await raw.send(
      c.Msg.Fetch,
      c.encodeFetch({
        requestId: 4n,
        priority: 0,
        groupOrder: 1,
        range: { kind: "joining", joinId: 2n, start: { groupsBack: 3 } },
      }, 14),
    );
    assert.equal((await raw.answer(c.Msg.FetchOk, c.Msg.FetchError)).type, c.Msg.FetchOk);
    const joined = await readFetchStream(raw.session, 14);
    assert.equal(joined.id, 4n);
    assert.deepEqual(joined.objects, [
      '3.0 {"payload":"r3"}',
      '4.0 {"payload":"r4"}',
      '5.0 {"payload":"r5"}',
    ]);
  } finally {
    raw.session.close(0, "");
  }
});
