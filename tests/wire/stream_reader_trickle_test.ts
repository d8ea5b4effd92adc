/**
 * A peer that sends a large frame one byte per packet, to a reader that
 * keeps up, has every read return one byte. `StreamReader.bytes` kept each
 * read as a part of its own until the frame was whole: a typed array and an
 * ArrayBuffer per byte, about 210 bytes of heap for each byte received
 * (211 MiB for 1 MiB). The receive budget counts a frame's bytes and one
 * FRAME_COST per frame, not per read, so a publisher trickling 32 MiB frames
 * (the largest taken) on a few streams would run the process out of memory.
 * The byte stream below answers each BYOB read with one byte, as Deno's QUIC
 * stream does when one-byte packets arrive slower than they are read.
 */
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { StreamReader } from "../../src/wire/mod.ts";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

function heapAfterGc(): number {
  gc();
  gc();
  return Deno.memoryUsage().heapUsed;
}

const MiB = 1 << 20;
const FRAME = MiB;

Deno.test("stream reader: a large run received a byte a read holds about its size, not a part per byte", async () => {
  let sent = 0;
  let stalled!: () => void;
  const atStall = new Promise<void>((resolve) => (stalled = resolve));
  // Every byte but the last, one a read; then the peer goes quiet.
  const stream = new ReadableStream({
    type: "bytes",
    pull(c): Promise<void> | undefined {
      if (sent === FRAME - 1) {
        stalled();
        return new Promise<void>(() => {});
      }
      const request = c.byobRequest!;
      (request.view as Uint8Array)[0] = sent++ & 0xff;
      request.respond(1);
      return undefined;
    },
  });
  const before = heapAfterGc();
  const reader = new StreamReader(stream);
  const pending = reader.bytes(FRAME);
  await atStall;
  const held = heapAfterGc() - before;
  assert.ok(
    held < 8 * MiB,
    `${(held / MiB).toFixed(0)} MiB of heap held for ${((FRAME - 1) / MiB).toFixed(0)} MiB ` +
      "received a byte a read",
  );
  reader.cancel();
  await pending.catch(() => {});
});
