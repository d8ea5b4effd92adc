// The funnel's own MoQ listener, end to end: HTTP POST → ledger → MoQ group
// → subscriber (our client over native QUIC and WebTransport, and @moq/net).
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { MoqError } from "../../../../src/moq/mod.ts";
import { announcedPaths, dialNet, dialOurs } from "../../../support/moq.ts";
import { quiet } from "../../../support/quiet.ts";
import { until } from "../../../support/wait.ts";
import { post, send, startLiveFunnel, take, takeNet } from "../../../support/live_funnel.ts";

const decoder = new TextDecoder();

Deno.test("PUT then POSTs: waiting subscribers (ours over QUIC and WebTransport, @moq/net) get every record in order as group seq + 1", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  assert.equal(await send(f.base, "PUT", "/tracks/room/1/chat"), 201);

  const quic05 = await dialOurs(f.moqPort, { alpn: "moq-lite-05" });
  const quic04 = await dialOurs(f.moqPort, { alpn: "moq-lite-04" });
  const wt = await dialOurs(f.moqPort, { webTransport: true });
  const net = await dialNet(f.moqPort);
  try {
    const subs = [quic05, quic04, wt].map((m) => m.subscribe("room/1", "chat"));
    await Promise.all(subs.map((s) => s.ready));
    const netSub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    // @moq/net subscribes in the background: post once all four are being served.
    const listener = f.funnel.live.listener!;
    await until(async () => await listener.subscribers("room/1", "chat") === 4, "four subscribers");

    const bodies = ['{"text":"hello"}', "42", '"third"', '[1,{"a":null}]'];
    const groups: string[] = [];
    for (const body of bodies) groups.push((await post(f.base, "room/1/chat", body)).group);
    assert.deepEqual(groups, [
      "e000001-g00000000",
      "e000001-g00000001",
      "e000001-g00000002",
      "e000001-g00000003",
    ]);
    const want = bodies.map((b, i) => ({ seq: i + 1, frame: `{"payload":${b}}` }));
    for (const sub of subs) assert.deepEqual(await take(sub, bodies.length), want);

    assert.deepEqual(await takeNet(netSub, bodies.length), want);
    netSub.close();
  } finally {
    for (const m of [quic05, quic04, wt]) m.close(0, "");
    net.close();
  }
});

Deno.test("A late subscriber starts at the track's latest record; a redaction is published as its own group", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  const groups: string[] = [];
  for (let i = 1; i <= 5; i++) groups.push((await post(f.base, "live/a/feed", `{"n":${i}}`)).group);

  const ours = await dialOurs(f.moqPort);
  const net = await dialNet(f.moqPort, { version: "moq-lite-04" });
  try {
    const sub = ours.subscribe("live/a", "feed");
    assert.deepEqual(await take(sub, 1), [{ seq: 5, frame: '{"payload":{"n":5}}' }]);
    const netSub = net.consume(Net.Path.from("live/a")).track("feed").subscribe({});
    const first = await netSub.recvGroup();
    assert.equal(first?.sequence, 5);
    assert.equal(decoder.decode((await first!.readFrame())?.payload), '{"payload":{"n":5}}');

    assert.equal(await send(f.base, "DELETE", `/tracks/live/a/feed?group=${groups[1]}`), 201);
    assert.deepEqual(await take(sub, 1), [{ seq: 6, frame: `{"redacts":"${groups[1]}"}` }]);
    const redaction = await netSub.recvGroup();
    assert.equal(redaction?.sequence, 6);
    assert.equal(
      decoder.decode((await redaction!.readFrame())?.payload),
      `{"redacts":"${groups[1]}"}`,
    );
    // Redacting again commits nothing, so nothing more is published.
    assert.equal(await send(f.base, "DELETE", `/tracks/live/a/feed?group=${groups[1]}`), 204);
    await post(f.base, "live/a/feed", '"after"');
    assert.deepEqual(await take(sub, 1), [{ seq: 7, frame: '{"payload":"after"}' }]);
    netSub.close();
  } finally {
    ours.close(0, "");
    net.close();
  }
});

Deno.test("A subscription to a track never created is refused as not found, on both versions", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  await post(f.base, "room/1/chat", "1");
  for (const alpn of ["moq-lite-05", "moq-lite-04"]) {
    const moq = await dialOurs(f.moqPort, { alpn });
    try {
      for (const [path, track] of [["room/1", "other"], ["room/2", "chat"], ["room", "1"]]) {
        const sub = moq.subscribe(path!, track!);
        await assert.rejects(sub.ready, (e: unknown) => {
          assert.ok(e instanceof MoqError, String(e));
          return true;
        }, `${alpn} ${path} ${track}`);
      }
      if (alpn === "moq-lite-05") {
        await assert.rejects(moq.trackInfo("room/1", "other"), (e: unknown) => {
          assert.ok(e instanceof MoqError && e.code === "not_found", String(e));
          return true;
        });
      }
      // The session is still good for a track that exists.
      const ok = moq.subscribe("room/1", "chat");
      assert.deepEqual(await take(ok, 1), [{ seq: 1, frame: '{"payload":1}' }]);
    } finally {
      moq.close(0, "");
    }
  }
});

Deno.test("The funnel announces every broadcast with a created track to its subscribers", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  await send(f.base, "PUT", "/tracks/a/b/t");
  await post(f.base, "c/t", "1");
  const moq = await dialOurs(f.moqPort);
  try {
    const seen = await announcedPaths(moq, 2);
    assert.deepEqual([...seen].sort(), ["a/b", "c"]);
  } finally {
    moq.close(0, "");
  }
});
