// The funnel's own MoQ listener serves IETF MoQ Transport subscribers (drafts
// 14, 16 and 20, @moq/net forced to each over native QUIC) beside moq-lite ones.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { createVerifier, MemoryKeySource, signToken } from "../../../src/auth/mod.ts";
import { IetfCode, ietfCodec as c } from "../../../src/moq/mod.ts";
import { keySetOf, makeKey } from "../../support/credentials.ts";
import { dialNetIetf, dialNetIetfWeb, dialOurs, rawIetf } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until, within } from "../../support/wait.ts";
import { post, send, startLiveFunnel, take, takeNet } from "../../support/live_funnel.ts";

for (const draft of [14, 16, 20] as const) {
  Deno.test(`funnel: a draft-${draft} subscriber gets every record in order, beside a moq-lite one`, async () => {
    using _q = quiet();
    await using f = await startLiveFunnel();
    assert.equal(await send(f.base, "PUT", "/tracks/room/1/chat"), 201);
    const lite = await dialOurs(f.moqPort);
    const net = await dialNetIetf(f.moqPort, draft);
    try {
      assert.equal(net.version, `moq-transport-${draft}`);
      const liteSub = lite.subscribe("room/1", "chat");
      await liteSub.ready;
      const netSub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
      const listener = f.funnel.live.listener!;
      await until(
        async () => await listener.subscribers("room/1", "chat") === 2,
        "two subscribers",
      );
      const bodies = ['{"text":"hello"}', "42", '"third"', '[1,{"a":null}]'];
      for (const body of bodies) await post(f.base, "room/1/chat", body);
      const want = bodies.map((b, i) => ({ seq: i + 1, frame: `{"payload":${b}}` }));
      assert.deepEqual(await take(liteSub, bodies.length), want);
      assert.deepEqual(await within(takeNet(netSub, bodies.length), 10_000, "the records"), want);
      netSub.close();
      // A track never created is refused: the subscription ends without a group.
      const missing = net.consume(Net.Path.from("room/1")).track("nope").subscribe({});
      assert.equal(
        await within(missing.recvGroup().catch(() => undefined), 10_000, "the refusal"),
        undefined,
      );
    } finally {
      lite.close(0, "");
      net.close();
    }
  });
}

Deno.test("funnel: draft 20 subscribers over WebSocket and WebTransport get every record in order", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  assert.equal(await send(f.base, "PUT", "/tracks/room/1/chat"), 201);
  const ws = await dialNetIetfWeb(f.moqPort, "websocket", 20);
  const wt = await dialNetIetfWeb(f.moqPort, "webtransport", 20);
  try {
    const subs = [ws, wt].map((n) =>
      n.consume(Net.Path.from("room/1")).track("chat").subscribe({})
    );
    const listener = f.funnel.live.listener!;
    await until(async () => await listener.subscribers("room/1", "chat") === 2, "two subscribers");
    const bodies = ['"one"', '"two"', '"three"'];
    for (const body of bodies) await post(f.base, "room/1/chat", body);
    const want = bodies.map((b, i) => ({ seq: i + 1, frame: `{"payload":${b}}` }));
    for (const sub of subs) {
      assert.deepEqual(await within(takeNet(sub, bodies.length), 10_000, "the records"), want);
      sub.close();
    }
  } finally {
    ws.close();
    wt.close();
  }
});

// The credential lease holds for IETF subscribers too: once the credential has expired past the
// leeway (by the funnel's clock, shifted by hand), a new SUBSCRIBE is refused and the session ends
// with IETF's UNAUTHORIZED code, in draft 14 (credential in the setup PATH) and draft 20 (in the URL).
for (const draft of [14, 20] as const) {
  Deno.test(`funnel: a draft-${draft} session whose credential expired past the leeway opens nothing more and is ended`, async () => {
    using _q = quiet();
    const key = await makeKey();
    let offset = 0;
    const now = () => Date.now() + offset;
    const verifier = await createVerifier(new MemoryKeySource(await keySetOf(key)), { now });
    await using f = await startLiveFunnel({}, { verifier, live: { now } });
    const poster = await signToken(key.privateJwk, {
      scopes: [{ actions: ["post"], broadcast: { prefix: "room" } }],
    }, { ttlSeconds: 3600, now });
    await post(f.base, "room/1/chat", '"hi"', poster);
    await post(f.base, "room/1/other", '"x"', poster);
    const reader = await signToken(key.privateJwk, {
      scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
    }, { ttlSeconds: 120, now });
    // 120 s of lifetime and the 60 s leeway pass (by the funnel's clock) once the session is in.
    const expire = () => void (offset += 200_000);
    if (draft === 14) {
      const raw = await rawIetf(f.moqPort, `/?jwt=${reader}`);
      try {
        const subscribe = (requestId: bigint, track: string) =>
          raw.send(
            c.Msg.Subscribe,
            c.encodeSubscribe({
              requestId,
              path: "room/1",
              track,
              priority: 128,
              groupOrder: 0,
              forward: true,
              filter: { kind: "largest-object" },
            }, 14),
          );
        await subscribe(0n, "chat");
        const ok = await raw.answer(c.Msg.SubscribeOk, c.Msg.SubscribeError);
        assert.equal(ok.type, c.Msg.SubscribeOk, "admitted and served while valid");
        expire();
        await subscribe(2n, "other");
        const late = await raw.answer(c.Msg.SubscribeOk, c.Msg.SubscribeError)
          .catch(() => undefined);
        assert.notEqual(late?.type, c.Msg.SubscribeOk, "no new subscription once expired");
        const info = await within(raw.session.closed, 5000, "the session's end");
        assert.equal(info.code, IetfCode.Unauthorized);
      } finally {
        raw.session.close(0, "");
      }
    } else {
      const net = await dialNetIetfWeb(f.moqPort, "webtransport", 20, reader);
      try {
        const first = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
        const posting = setInterval(() => void post(f.base, "room/1/chat", '"more"', poster), 100);
        try {
          assert.ok(await within(first.recvGroup(), 10_000, "a group while valid"));
        } finally {
          clearInterval(posting);
        }
        expire();
        const late = net.consume(Net.Path.from("room/1")).track("other").subscribe({});
        const nudging = setInterval(() => void post(f.base, "room/1/other", '"y"', poster), 100);
        try {
          const group = await within(late.recvGroup().catch(() => undefined), 10_000, "refusal");
          assert.equal(group, undefined, "no new subscription once expired");
        } finally {
          clearInterval(nudging);
        }
        await within(net.closed, 5000, "the session's end");
      } finally {
        net.close();
      }
    }
  });
}

// Draft 20 carries timestamps: SUBSCRIBE_OK declares the track's timescale (TIMESCALE, here
// nanoseconds) and each object its TIMESTAMP property, which @moq/net reads as the frame's.
Deno.test("funnel: a draft-20 subscriber reads each record's commit time as its frame's timestamp", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  assert.equal(await send(f.base, "PUT", "/tracks/room/1/chat"), 201);
  const net = await dialNetIetf(f.moqPort, 20);
  try {
    const sub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    const listener = f.funnel.live.listener!;
    await until(async () => await listener.subscribers("room/1", "chat") === 1, "the subscriber");
    const r = await fetch(`${f.base}/tracks/room/1/chat`, { method: "POST", body: '"stamped"' });
    assert.equal(r.status, 201);
    const wallclock = BigInt(/"wallclock":(\d+)/.exec(await r.text())![1]!);
    const group = await within(sub.recvGroup(), 10_000, "the record");
    const frame = await group!.readFrame();
    assert.equal(new TextDecoder().decode(frame?.payload), '{"payload":"stamped"}');
    assert.equal(frame?.timestamp?.scale, 1_000_000_000);
    assert.equal(frame?.timestamp?.value, Number(wallclock));
    sub.close();
  } finally {
    net.close();
  }
});
