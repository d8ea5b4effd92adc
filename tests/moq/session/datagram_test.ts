// lite-05 datagram delivery between two of our sessions over native QUIC:
// what the `datagrams` option sends as datagrams, what falls back to a
// stream, and that a group arriving both ways is delivered once.
import assert from "node:assert/strict";
import {
  accept,
  connect,
  MAX_DATAGRAM_BODY,
  type MoqSession,
  type MoqSessionOptions,
  type ReceivedGroup,
  TrackProducer,
} from "../../../src/moq/mod.ts";
import { encodeDatagram } from "../../../src/moq/codec/messages.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { until, within } from "../../support/wait.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

async function pair(
  serve: MoqSessionOptions,
): Promise<{ server: MoqSession; client: MoqSession; stop: () => Promise<void> }> {
  const p = await quicPair("moq-lite-05");
  const [server, client] = await Promise.all([accept(p.server, serve), connect(p.client, {})]);
  return {
    server,
    client,
    stop: async () => {
      client.close(0, "");
      server.close(0, "");
      await p.stop();
    },
  };
}

async function take(it: AsyncIterator<ReceivedGroup>): Promise<ReceivedGroup> {
  const r = await within(it.next(), 5000, "a group");
  assert.ok(!r.done, "the subscription ended early");
  return r.value;
}

Deno.test("datagram track: single-frame groups that fit go as datagrams, the rest on streams", async () => {
  const chat = new TrackProducer({ cache: 16 });
  const video = new TrackProducer({ cache: 16 });
  const { server, client, stop } = await pair({
    serve: (r) => (r.track === "chat" ? chat : r.track === "video" ? video : "not_found"),
    datagrams: (_path, track) => track === "chat",
  });
  try {
    const sub = client.subscribe("room/1", "chat");
    await sub.ready;
    const it = sub[Symbol.asyncIterator]();
    const big = new Uint8Array(MAX_DATAGRAM_BODY + 1).fill(7);
    chat.writeGroup(1, enc.encode("small 1"));
    assert.equal(dec.decode((await take(it)).frames[0]), "small 1");
    chat.writeGroup(2, big);
    assert.deepEqual((await take(it)).frames, [big]);
    chat.writeGroup(3, [enc.encode("two"), enc.encode("frames")]);
    assert.deepEqual((await take(it)).frames.map((f) => dec.decode(f)), ["two", "frames"]);
    chat.writeGroup(4, enc.encode("small 4"), { timestamp: 123_456_789_012n });
    const g4 = await take(it);
    assert.equal(dec.decode(g4.frames[0]), "small 4");
    assert.equal(g4.exactTimestamp, 123_456_789_012n, "the datagram carries the exact timestamp");
    assert.equal(server.stats.datagramsSent, 2);
    assert.equal(server.stats.datagramFallbacks, 2);
    assert.equal(client.stats.datagramsReceived, 2);
    // Nothing newer follows group 4: it goes again on a stream (in case the datagram was lost),
    // and the subscriber does not see it twice.
    await until(() => server.stats.datagramTailRepeats === 1, "the last datagram repeated");
    chat.writeGroup(5, [enc.encode("five"), enc.encode("!")]);
    assert.equal((await take(it)).sequence, 5);

    // A track the option does not name is served on streams as before.
    const vsub = client.subscribe("room/1", "video");
    await vsub.ready;
    const vit = vsub[Symbol.asyncIterator]();
    video.writeGroup(1, enc.encode("frame"));
    assert.equal(dec.decode((await take(vit)).frames[0]), "frame");
    assert.equal(server.stats.datagramsSent, 2);
    assert.equal(server.stats.datagramFallbacks, 3);
    assert.equal(client.stats.datagramsReceived, 2);
  } finally {
    await stop();
  }
});

Deno.test("a group that arrives as a datagram and on a stream is delivered once", async () => {
  const chat = new TrackProducer({ cache: 16 });
  const { server, client, stop } = await pair({
    serve: (r) => (r.track === "chat" ? chat : "not_found"),
  });
  try {
    const sub = client.subscribe("room/1", "chat");
    await sub.ready;
    const it = sub[Symbol.asyncIterator]();
    const datagram = (sequence: number, text: string) =>
      server.transport.sendDatagram!(encodeDatagram({
        subscribeId: sub.id,
        sequence,
        timestamp: 0n,
        payload: enc.encode(text),
      }));
    // Group 1 on a stream, then again as a datagram; group 2 as a datagram (twice), then on a stream.
    chat.writeGroup(1, enc.encode("one"));
    assert.equal((await take(it)).sequence, 1);
    await datagram(1, "one again");
    await datagram(2, "two");
    await datagram(2, "two again");
    assert.equal(dec.decode((await take(it)).frames[0]), "two");
    chat.writeGroup(2, enc.encode("two by stream"));
    chat.writeGroup(3, enc.encode("three"));
    const next = await take(it);
    assert.equal(next.sequence, 3, "group 2 was not delivered a second time");
    // Every datagram reached the session; only the new sequence was handed on.
    await until(() => client.stats.datagramsReceived === 3, "three datagrams");
    assert.equal(sub.skipped, 0);
  } finally {
    await stop();
  }
});
