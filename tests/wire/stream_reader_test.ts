import assert from "node:assert/strict";
import { DecodeError, StreamReader } from "../../src/wire/mod.ts";

const bytes = (s: string) =>
  Uint8Array.from(s.split(/\s+/).filter(Boolean), (x) => parseInt(x, 16));

function streamOf(...chunks: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(bytes(ch));
      c.close();
    },
  });
}

Deno.test("stream reader: fields across chunk boundaries, FIN mid-field, size limits", async () => {
  const r = new StreamReader(streamOf("40", "40 c0 00", "00 00 00 00 00 07", "03 61", "62 63"));
  assert.equal(await r.u53(), 64);
  assert.equal(await r.u62(), 7n);
  assert.equal(new TextDecoder().decode(await r.message("m", 10)), "abc");
  assert.equal(await r.done(), true);
  const t = new StreamReader(streamOf("80 00"));
  await assert.rejects(t.u53(), (e: unknown) => e instanceof DecodeError && e.code === "truncated");
  const big = new StreamReader(streamOf("44 00"));
  await assert.rejects(
    big.message("m", 100),
    (e: unknown) => e instanceof DecodeError && e.code === "too_large",
  );
  const short = new StreamReader(streamOf("05 61 62"));
  await assert.rejects(
    short.message("m", 100),
    (e: unknown) => e instanceof DecodeError && e.code === "truncated",
  );
  let counted = 0;
  const c = new StreamReader(streamOf("01", "02 03"), (n) => counted += n);
  assert.deepEqual(await c.bytes(3), bytes("01 02 03"));
  assert.equal(counted, 3);
});

/** A byte stream (BYOB-capable, as Deno's QUIC receive streams are) serving `chunks`. */
function byteStreamOf(...chunks: string[]): ReadableStream<Uint8Array> {
  const queue = chunks.map(bytes);
  return new ReadableStream({
    type: "bytes",
    pull(c) {
      const next = queue.shift();
      if (next === undefined) {
        c.close();
        c.byobRequest?.respond(0);
      } else {
        c.enqueue(next);
      }
    },
  });
}

Deno.test("stream reader: BYOB byte streams read the same fields", async () => {
  const r = new StreamReader(byteStreamOf("40", "40 c0 00", "00 00 00 00 00 07", "03 61", "62 63"));
  assert.equal(await r.u53(), 64);
  assert.equal(await r.u62(), 7n);
  assert.equal(new TextDecoder().decode(await r.message("m", 10)), "abc");
  assert.equal(await r.done(), true);
});

Deno.test("stream reader: optional varints and bytes end cleanly at FIN, skips and chunks", async () => {
  const r = new StreamReader(streamOf("41", "00 07", "01 02 03 04 05", "06"));
  assert.equal(await r.varint(), 256);
  assert.equal(await r.u8(), 7);
  await r.skip(3);
  assert.deepEqual(await r.chunk(10), bytes("04 05"));
  assert.deepEqual(await r.chunk(10), bytes("06"));
  assert.equal(await r.varint(), undefined, "a FIN before a varint is not an error");
  assert.equal(await r.u8(), undefined);
  assert.equal(await r.chunk(1), undefined);
  // A FIN inside a varint or a skipped run is.
  await assert.rejects(
    new StreamReader(streamOf("80 00")).varint("a frame"),
    (e: unknown) => e instanceof DecodeError && e.code === "truncated",
  );
  await assert.rejects(
    new StreamReader(streamOf("01 02")).skip(3),
    (e: unknown) => e instanceof DecodeError && e.code === "truncated",
  );
});

Deno.test("stream reader: the rest of a stream is handed on after its header", async () => {
  const source = streamOf("00 05 68", "69 21");
  const r = new StreamReader(source.getReader());
  assert.equal(await r.varint(), 0);
  assert.deepEqual(r.takeBuffered(), bytes("05 68"));
  const reader = r.reader as ReadableStreamDefaultReader<Uint8Array>;
  const rest = await reader.read();
  assert.deepEqual(rest.value, bytes("69 21"));
  assert.equal((await reader.read()).done, true);
});

Deno.test("stream reader: a byte stream's rest is handed on as its BYOB reader", async () => {
  const r = new StreamReader(byteStreamOf("00 05 68", "69 21"));
  assert.equal(await r.varint(), 0);
  assert.deepEqual(r.takeBuffered(), bytes("05 68"));
  assert.ok(r.reader instanceof ReadableStreamBYOBReader);
  const rest = await r.reader.read(new Uint8Array(8));
  assert.deepEqual(rest.value, bytes("69 21"));
  assert.equal((await r.reader.read(new Uint8Array(8))).done, true);
});
