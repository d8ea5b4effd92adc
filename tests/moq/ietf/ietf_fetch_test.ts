// FETCH served by our IETF session, drafts 14, 16 and 20, over real QUIC: a
// raw client (our codec; no independent IETF peer implements FETCH: @moq/net
// 0.3.4 throws "FETCH messages are not supported") asks for a range of a
// track whose older groups are no longer cached but read back through the
// producer's fetchMissing (where the funnel reads its ledger), and joins a
// subscription with a joining FETCH.
import assert from "node:assert/strict";
import { acceptIetf, ietfCodec as c, type IetfDraft, TrackProducer } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { rawClient, readFetchStream } from "../../support/moq.ts";

const enc = new TextEncoder();
const ALPN: Record<IetfDraft, string> = { 14: "moq-00", 16: "moqt-16", 20: "moqt-20" };

// A track of groups 0..9, three frames each; its cache holds the last 4, the rest are
// read back from `ledger` as the funnel reads its records back.
function trackWithLedger(): { track: TrackProducer; reads: number[] } {
  const reads: number[] = [];
  const framesOf = (g: number): Uint8Array[] => [0, 1, 2].map((o) => enc.encode(`g${g}o${o}`));
  const track = new TrackProducer({
    cache: 4,
    fetchMissing: (sequence) => {
      reads.push(sequence);
      return Promise.resolve(
        sequence < 10 ? { frames: framesOf(sequence), timestamp: 0 } : undefined,
      );
    },
  });
  for (let g = 0; g < 10; g++) track.writeGroup(g, framesOf(g));
  return { track, reads };
}

const expected = (from: [number, number], to: [number, number]): string[] => {
  const out: string[] = [];
  for (let g = from[0]; g <= to[0]; g++) {
    for (let o = g === from[0] ? from[1] : 0; o <= (g === to[0] ? to[1] : 2); o++) {
      out.push(`${g}.${o} g${g}o${o}`);
    }
  }
  return out;
};

for (const draft of [14, 16, 20] as const) {
  Deno.test(`ietf fetch: draft ${draft}: a standalone FETCH is served from the cache and the ledger, in order`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const { track, reads } = trackWithLedger();
    const serverP = acceptIetf(pair.server, { log: () => {}, serve: () => track });
    try {
      const raw = await rawClient(pair.client, draft);
      await serverP;
      const next = await raw.request(
        c.Msg.Fetch,
        c.encodeFetch({
          requestId: 0n,
          priority: 7,
          groupOrder: 1,
          range: {
            kind: "standalone",
            path: "room/1",
            track: "chat",
            start: { group: 3, object: 1 },
            end: { group: 7, object: 1 },
          },
        }, draft),
      );
      const ok = await next();
      assert.equal(ok.type, c.Msg.FetchOk);
      assert.deepEqual(c.decodeFetchOk(ok.body, draft, 0n).end, { group: 7, object: 1 });
      const got = await readFetchStream(pair.client, draft);
      assert.equal(got.id, 0n);
      assert.deepEqual(got.objects, expected([3, 1], [7, 1]));
      assert.deepEqual(reads, [3, 4, 5], "groups below the cache read back, the rest cached");
    } finally {
      await pair.stop();
    }
  });

  Deno.test(`ietf fetch: draft ${draft}: a joining FETCH ends at the subscription's largest object`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const { track } = trackWithLedger();
    const serverP = acceptIetf(pair.server, { log: () => {}, serve: () => track });
    try {
      const raw = await rawClient(pair.client, draft);
      await serverP;
      const sub = await raw.request(
        c.Msg.Subscribe,
        c.encodeSubscribe({
          requestId: 0n,
          path: "room/1",
          track: "chat",
          priority: 0,
          groupOrder: 0,
          forward: true,
          filter: { kind: "largest-object" },
        }, draft),
      );
      assert.equal((await sub()).type, c.Msg.SubscribeOk);
      const next = await raw.request(
        c.Msg.Fetch,
        c.encodeFetch({
          requestId: 2n,
          priority: 0,
          groupOrder: 0,
          range: { kind: "joining", joinId: 0n, start: { groupsBack: 3 } },
        }, draft),
      );
      const ok = await next();
      assert.equal(ok.type, c.Msg.FetchOk, `answer ${ok.type}`);
      assert.deepEqual(c.decodeFetchOk(ok.body, draft, 2n).end, { group: 9, object: 2 });
      const got = await readFetchStream(pair.client, draft);
      assert.equal(got.id, 2n);
      assert.deepEqual(got.objects, expected([7, 0], [9, 2]));
    } finally {
      await pair.stop();
    }
  });

  Deno.test(`ietf fetch: draft ${draft}: refusals name the draft's codes; the session stays`, async () => {
    const pair = await quicPair(ALPN[draft]);
    const { track } = trackWithLedger();
    const moqP = acceptIetf(pair.server, {
      log: () => {},
      serve: (r) => (r.track === "chat" ? track : "not_found"),
    });
    try {
      const raw = await rawClient(pair.client, draft);
      const moq = await moqP;
      const ask = async (id: bigint, range: c.FetchRange): Promise<number> => {
        const next = await raw.request(
          c.Msg.Fetch,
          c.encodeFetch({ requestId: id, priority: 0, groupOrder: 0, range }, draft),
        );
        const m = await next();
        assert.equal(m.type, draft < 16 ? c.Msg.FetchError : c.Msg.RequestError);
        return c.decodeRequestError(m.body, draft, id).code;
      };
      const std = { kind: "standalone", path: "room/1", track: "chat" } as const;
      assert.equal(await ask(0n, { ...std, track: "other" }), draft < 16 ? 0x4 : 0x10);
      assert.equal(
        await ask(2n, { ...std, start: { group: 12, object: 0 } }),
        draft < 16 ? 0x5 : 0x11,
        "past the largest object",
      );
      assert.equal(
        await ask(4n, { kind: "joining", joinId: 40n, start: { groupsBack: 1 } }),
        draft < 16 ? 0x7 : 0x32,
        "no such subscription",
      );
      assert.ok(!moq.isClosed);
    } finally {
      await pair.stop();
    }
  });
}

Deno.test("ietf fetch: a session has at most 64 FETCHes served at once; the 65th is refused, the session stays", async () => {
  const pair = await quicPair(ALPN[14]);
  // Every group is read back from a source that answers only when the fetch is cancelled.
  const track = new TrackProducer({
    cache: 1,
    fetchMissing: (_sequence, signal) =>
      new Promise((resolve) => signal.addEventListener("abort", () => resolve(undefined))),
  });
  track.writeGroup(1000, [enc.encode("latest")]);
  const moqP = acceptIetf(pair.server, { log: () => {}, serve: () => track });
  try {
    const raw = await rawClient(pair.client, 14);
    const moq = await moqP;
    let next!: () => Promise<c.ControlMessage>;
    for (let i = 0; i <= 64; i++) {
      next = await raw.request(
        c.Msg.Fetch,
        c.encodeFetch({
          requestId: BigInt(i * 2),
          priority: 0,
          groupOrder: 1,
          range: { kind: "standalone", path: "a", track: "t", start: { group: 0, object: 0 } },
        }, 14),
      );
    }
    const answers: number[] = [];
    while (answers.length < 65) answers.push((await next()).type);
    assert.equal(answers.filter((t) => t === c.Msg.FetchOk).length, 64);
    assert.equal(answers.filter((t) => t === c.Msg.FetchError).length, 1);
    assert.ok(!moq.isClosed);
  } finally {
    await pair.stop();
  }
});

Deno.test("ietf fetch: one answer holds at most 1024 groups; FETCH_OK says where it ends", async () => {
  const pair = await quicPair(ALPN[16]);
  const track = new TrackProducer({
    cache: 1,
    fetchMissing: () => Promise.resolve(undefined),
  });
  track.writeGroup(5000, [enc.encode("latest")]);
  const serverP = acceptIetf(pair.server, { log: () => {}, serve: () => track });
  try {
    const raw = await rawClient(pair.client, 16);
    await serverP;
    const next = await raw.request(
      c.Msg.Fetch,
      c.encodeFetch({
        requestId: 0n,
        priority: 0,
        groupOrder: 1,
        range: { kind: "standalone", path: "a", track: "t", start: { group: 10, object: 0 } },
      }, 16),
    );
    const ok = await next();
    assert.equal(ok.type, c.Msg.FetchOk);
    assert.deepEqual(c.decodeFetchOk(ok.body, 16).end, { group: 1033 });
  } finally {
    await pair.stop();
  }
});
