/** A raw peer sends malformed and hostile bytes; our session must contain each failure. */
import assert from "node:assert/strict";
import { accept, connect, TrackProducer } from "../../../src/moq/mod.ts";
import type { Session } from "../../../src/transport/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { until } from "../../support/wait.ts";

const b = (...xs: number[]) => new Uint8Array(xs);

async function sendUni(s: Session, bytes: Uint8Array): Promise<void> {
  const w = (await s.openUni()).writable.getWriter();
  await w.write(bytes);
  await w.close();
}

/** Opens a bidi stream, writes, FINs, and returns everything the other side answered. */
async function bidiExchange(s: Session, bytes: Uint8Array): Promise<Uint8Array> {
  const stream = await s.openBidi();
  const w = stream.writable.getWriter();
  await w.write(bytes);
  await w.close();
  return new Uint8Array(await new Response(stream.readable).arrayBuffer());
}

const SETUP_EMPTY = b(0x01, 0x01, 0x00);

Deno.test("moq-lite-05: malformed streams end only themselves, logged once each", async () => {
  const pair = await quicPair("moq-lite-05");
  const logs: string[] = [];
  const track = new TrackProducer();
  track.writeGroup(1, b(42));
  const serverP = accept(pair.server, {
    serve: (r) => r.path === "ok" ? track : "not_found",
    log: (m) => logs.push(m),
  });
  await sendUni(pair.client, SETUP_EMPTY);
  const moq = await serverP;
  // Unknown uni and bidi stream types, twice each.
  await sendUni(pair.client, b(0x3f, 1, 2, 3));
  await sendUni(pair.client, b(0x3f));
  assert.equal((await bidiExchange(pair.client, b(0x30, 9))).length, 0);
  assert.equal((await bidiExchange(pair.client, b(0x30))).length, 0);
  // SUBSCRIBE whose length runs past the end of the stream; then one with trailing bytes.
  assert.equal((await bidiExchange(pair.client, b(0x02, 0x20, 0x00))).length, 0);
  assert.equal(
    (await bidiExchange(pair.client, b(0x02, 0x0b, 0, 2, 0x6f, 0x6b, 0, 0, 0, 0, 0, 0, 9))).length,
    0,
  );
  // A 2^62-1 varint as a message length.
  assert.equal(
    (await bidiExchange(pair.client, b(0x06, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)))
      .length,
    0,
  );
  // A group for a subscription that never existed.
  await sendUni(pair.client, b(0x00, 0x02, 0x05, 0x01, 0x01, 0x61));
  // A probe stream is answered with a clean FIN, never a reset.
  assert.equal((await bidiExchange(pair.client, b(0x04, 0x02, 0x00, 0x00))).length, 0);
  // The session still serves a well-formed TRACK request.
  const info = await bidiExchange(pair.client, b(0x06, 0x05, 0x02, 0x6f, 0x6b, 0x01, 0x74));
  assert.deepEqual(info, b(0x06, 0x00, 0x00, 0x53, 0x88, 0x43, 0xe8));
  // Wait until every stream above was processed (they race the TRACK stream).
  await until(() => moq.stats.protocolErrors >= 8, "the 8 malformed streams processed");
  assert.equal(moq.isClosed, false);
  assert.ok(moq.stats.protocolErrors >= 8, `protocolErrors ${moq.stats.protocolErrors}`);
  const kinds = logs.map((l) => l.replace(/\d+/g, "#"));
  assert.equal(new Set(kinds).size, kinds.length, `a kind was logged twice: ${logs.join("\n")}`);
  await pair.stop();
});

Deno.test("moq-lite-05: a second SETUP closes the session with a protocol violation", async () => {
  const pair = await quicPair("moq-lite-05");
  const serverP = accept(pair.server, { log: () => {} });
  await sendUni(pair.client, SETUP_EMPTY);
  const moq = await serverP;
  await sendUni(pair.client, SETUP_EMPTY);
  const info = await pair.client.closed;
  assert.equal(info.code, 15);
  assert.equal((await moq.closed).code, 15);
  await pair.stop();
});

Deno.test("moq-lite-05: a malformed SETUP closes the session; a missing one times out", async () => {
  const pair = await quicPair("moq-lite-05");
  const serverP = accept(pair.server, { log: () => {} });
  // Duplicate parameter ids.
  await sendUni(pair.client, b(0x01, 0x07, 0x02, 0x05, 0x01, 0x01, 0x05, 0x01, 0x02));
  await assert.rejects(serverP);
  assert.equal((await pair.client.closed).code, 15);
  await pair.stop();

  const quiet = await quicPair("moq-lite-05");
  await assert.rejects(accept(quiet.server, { setupTimeout: 50, log: () => {} }), /SETUP/);
  assert.equal((await quiet.client.closed).code, 15);
  await quiet.stop();
});

Deno.test("accept: admit sees the SETUP url and can refuse before anything is served", async () => {
  const pair = await quicPair("moq-lite-05", "/x?jwt=bad");
  let served = 0;
  const serverP = accept(pair.server, {
    admit: (s) => s.url?.searchParams.get("jwt") === "good",
    serve: () => {
      served++;
      return "not_found";
    },
  });
  const stream = await pair.client.openBidi();
  const w = stream.writable.getWriter();
  await w.write(b(0x06, 0x05, 0x02, 0x6f, 0x6b, 0x01, 0x74));
  w.close().catch(() => {});
  await sendUni(
    pair.client,
    b(0x01, 0x0c, 0x01, 0x02, 0x09, ...new TextEncoder().encode("/x?jwt=bad")),
  );
  await assert.rejects(serverP, /not admitted/);
  assert.equal((await pair.client.closed).code, 6);
  assert.equal(served, 0);
  await pair.stop();
});

Deno.test("moq-lite-04: unknown protocol tokens are refused", async () => {
  const pair = await quicPair("moq-lite-03");
  await assert.rejects(accept(pair.server), /moq-lite-03/);
  await pair.stop();
});

Deno.test("moq-lite-04: an oversized frame ends that group only; the subscription goes on", async () => {
  const pair = await quicPair("moq-lite-04");
  const moq = await accept(pair.server, { maxFrameSize: 1000, log: () => {} });
  const sub = moq.subscribe("feed", "t");
  // The raw peer plays publisher: read SUBSCRIBE, answer SUBSCRIBE_OK.
  const stream = (await pair.client.acceptBidi())!;
  const reader = stream.readable.getReader();
  const first = await reader.read();
  assert.equal(first.value?.[0], 0x02);
  const w = stream.writable.getWriter();
  await w.write(b(0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00));
  await sub.ready;
  // Group 1 announces a 1 MiB frame (over the 1000-byte limit), group 2 is fine.
  await sendUni(pair.client, b(0x00, 0x02, 0x00, 0x01, 0x80, 0x10, 0x00, 0x00, 1, 2, 3));
  await sendUni(pair.client, b(0x00, 0x02, 0x00, 0x02, 0x02, 0x68, 0x69));
  const it = sub[Symbol.asyncIterator]();
  const g = await it.next();
  assert.equal(g.value?.sequence, 2);
  assert.equal(new TextDecoder().decode(g.value?.frames[0]), "hi");
  await until(() => moq.stats.protocolErrors >= 1, "the oversized frame refused");
  assert.equal(moq.stats.protocolErrors, 1);
  assert.equal(moq.isClosed, false);
  await it.return?.();
  reader.releaseLock();
  await w.close().catch(() => {});
  await pair.stop();
});

Deno.test("moq-lite-04: a group of 600,000 one-byte frames (1.2 MB sent, about 75 MB held) is dropped at the default limits", async () => {
  // Each frame held costs far more than its byte (its view, its place in the group), which a
  // publisher of one-byte or empty frames turned into gigabytes held: a crash of the relay.
  const pair = await quicPair("moq-lite-04");
  const moq = await accept(pair.server, { log: () => {} });
  const sub = moq.subscribe("feed", "t");
  const stream = (await pair.client.acceptBidi())!;
  const reader = stream.readable.getReader();
  await reader.read();
  const w = stream.writable.getWriter();
  await w.write(b(0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00));
  await sub.ready;
  const group = (await pair.client.openUni()).writable.getWriter();
  await group.write(b(0x00, 0x02, 0x00, 0x01));
  const chunk = new Uint8Array(20_000);
  for (let i = 0; i < chunk.length; i += 2) chunk[i] = 1; // frame size 1, its byte 0
  for (let i = 0; i < 60; i++) await group.write(chunk);
  await group.close().catch(() => {});
  await until(
    () => moq.stats.groupsReceived + moq.stats.protocolErrors > 0,
    "the group taken or refused",
  );
  assert.equal(moq.stats.groupsReceived, 0, "the group over the limit never arrives");
  await sendUni(pair.client, b(0x00, 0x02, 0x00, 0x02, 0x02, 0x68, 0x69));
  const it = sub[Symbol.asyncIterator]();
  const g = await it.next();
  assert.equal(g.value?.sequence, 2, "the next group arrives");
  assert.equal(moq.isClosed, false);
  await it.return?.();
  reader.releaseLock();
  await w.close().catch(() => {});
  await pair.stop();
});

Deno.test("a peer vanishing mid-transfer ends everything cleanly on both sides", async () => {
  for (const version of ["moq-lite-05", "moq-lite-04"]) {
    const pair = await quicPair(version);
    const track = new TrackProducer();
    track.writeGroup(0, b(0));
    const serverP = accept(pair.server, { serve: () => track, log: () => {} });
    const client = await connect(pair.client, { log: () => {} });
    const server = await serverP;
    const sub = client.subscribe("x", "y");
    const watch = client.announced("");
    const ownWatch = server.announced("");
    server.announce("x");
    let seq = 1;
    let n = 0;
    await assert.rejects(async () => {
      for await (const _ of sub) {
        // Keep the publisher busy with big groups while the connection dies.
        for (let i = 0; i < 20; i++) track.writeGroup(seq++, new Uint8Array(32_768));
        if (++n === 3) pair.server.close(0, "gone");
      }
    }, /closed/);
    for await (const _ of watch) { /* ends */ }
    for await (const _ of ownWatch) { /* ends */ }
    await server.closed;
    await client.closed;
    assert.equal(track.subscribers, 0);
    await pair.stop();
  }
});

Deno.test("moq-lite-05: datagrams deliver single-frame groups; garbage datagrams are dropped", async () => {
  const pair = await quicPair("moq-lite-05");
  assert.ok((pair.server.maxDatagramSize ?? 0) > 0, "QUIC datagrams available");
  const client = await connect(pair.client, { log: () => {} });
  const sub = client.subscribe("feed", "t");
  // The raw server plays publisher: TRACK → TRACK_INFO, SUBSCRIBE → SUBSCRIBE_START.
  const answered: Promise<void>[] = [];
  for (let i = 0; i < 2; i++) {
    const stream = (await pair.server.acceptBidi())!;
    const reader = stream.readable.getReader();
    const type = (await reader.read()).value?.[0];
    const w = stream.writable.getWriter();
    if (type === 0x06) {
      answered.push(w.write(b(0x06, 0x00, 0x00, 0x53, 0x88, 0x43, 0xe8)).then(() => w.close()));
    } else {
      answered.push(w.write(b(0x00, 0x01, 0x05)));
    }
    reader.releaseLock();
  }
  await Promise.all(answered);
  await sub.ready;
  await pair.server.sendDatagram!(b(0xff)); // truncated varint: dropped
  await pair.server.sendDatagram!(b(0x07, 0x05, 0x01, 0x61)); // unknown subscription: dropped
  await pair.server.sendDatagram!(b(0x00, 0x05, 0x40, 0x64, 0x68, 0x69)); // id 0, group 5, ts 100
  const it = sub[Symbol.asyncIterator]();
  const g = await it.next();
  assert.equal(g.value?.sequence, 5);
  assert.equal(g.value?.timestamp, 100);
  assert.equal(new TextDecoder().decode(g.value?.frames[0]), "hi");
  await it.return?.();
  await pair.stop();
});
