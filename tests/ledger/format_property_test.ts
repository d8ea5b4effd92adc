// The directory ledger's segment format and stored entries against generated
// and hostile input (group ids: tests/record/, track paths: tests/path/).
import assert from "node:assert/strict";
import { decodeBatch, encodeBatch } from "../../src/ledger/codec.ts";
import {
  frame,
  HEADER,
  lastFrameIn,
  parseSegment,
  TRAILER,
} from "../../src/ledger/directory/segment_file.ts";
import type { LedgerEntry } from "../../src/ledger/entry.ts";
import { LedgerError } from "../../src/ledger/errors.ts";
import { formatGroupId, parseGroupId } from "../../src/record/mod.ts";
import { concatBytes } from "../../src/wire/mod.ts";
import { check, decodesOrRefuses, fc, hostileBytes, retainedSize } from "../support/property.ts";

const text = fc.string({ unit: "grapheme", maxLength: 30 });
const json = fc.json({ maxDepth: 2 });

/** A batch of consecutive entries starting at `first`. */
function batch(first: fc.Arbitrary<number>): fc.Arbitrary<LedgerEntry[]> {
  const entry = fc.record({
    wallclock: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
    sender: fc.option(text, { nil: undefined }),
    body: fc.oneof(
      json.map((payload) => ({ payload })),
      fc.nat().map((seq) => ({ redacts: formatGroupId({ epoch: 1, seq }) })),
      fc.constant({ redacted: true as const }),
    ),
    idempotencyKey: fc.option(text, { nil: undefined }),
  });
  return fc.tuple(first, fc.array(entry, { minLength: 1, maxLength: 4 })).map(([s, es]) =>
    es.map((e, i) => {
      const out: { -readonly [K in keyof LedgerEntry]: LedgerEntry[K] } = {
        epoch: 1,
        seq: s + i,
        wallclock: e.wallclock,
        ...e.body,
      };
      if (e.sender !== undefined) out.sender = e.sender;
      if (e.idempotencyKey !== undefined) out.idempotencyKey = e.idempotencyKey;
      return out;
    })
  );
}

/** Consecutive batches from seq 0, as a segment's frames. */
const segment = fc.array(batch(fc.constant(0)), { maxLength: 5 }).map((bs) => {
  let next = 0;
  return bs.map((b) => b.map((e) => ({ ...e, seq: next++ })));
});

Deno.test("property: stored batches decode to what was encoded; hostile bytes decode or are corrupt", () => {
  check(
    fc.property(batch(fc.nat({ max: 1e9 })), (entries) => {
      assert.deepEqual(decodeBatch(encodeBatch(entries)), entries);
    }),
    500,
  );
  check(
    fc.property(hostileBytes(batch(fc.nat()).map(encodeBatch), 400), (bytes) => {
      const value = decodesOrRefuses(() => decodeBatch(bytes), [LedgerError], bytes);
      if (!value) return;
      assert.ok(retainedSize(value) <= 64 * bytes.length);
      // Every entry it returns names a group a client can use.
      for (const e of value) {
        assert.deepEqual(parseGroupId(formatGroupId(e)), { epoch: e.epoch, seq: e.seq });
      }
    }),
    1000,
  );
});

Deno.test("regression: a stored entry whose epoch is no group epoch is corrupt", () => {
  for (const e of ["1.5", "0", "-1", "1e300"]) {
    const bytes = new TextEncoder().encode(`[{"e":${e},"s":0,"w":"0"}]`);
    assert.throws(() => decodeBatch(bytes), LedgerError, e);
  }
});

Deno.test("property: a segment reads back its batches, and a damaged one only a valid prefix", () => {
  check(
    fc.property(segment, (batches) => {
      const bytes = concatBytes(batches.map(frame));
      const parsed = parseSegment(bytes, 0);
      assert.deepEqual(parsed.batches, batches);
      assert.equal(parsed.validLength, bytes.length);
    }),
    300,
  );
  check(
    fc.property(hostileBytes(segment.map((bs) => concatBytes(bs.map(frame))), 600), (bytes) => {
      const parsed = decodesOrRefuses(() => parseSegment(bytes, 0), [], bytes)!;
      assert.ok(parsed.validLength <= bytes.length);
      // What it accepts is exactly the frames it could re-write: nothing half-written.
      assert.deepEqual(
        concatBytes(parsed.batches.map(frame)),
        bytes.subarray(0, parsed.validLength),
      );
      let next = 0;
      for (const b of parsed.batches) {
        assert.equal(b[0]!.seq, next);
        next = b[b.length - 1]!.seq + 1;
      }
    }),
    1000,
  );
});

Deno.test("property: a torn tail leaves every whole frame before it", () => {
  check(
    fc.property(segment, fc.nat(), (batches, cut) => {
      const frames = batches.map(frame);
      const bytes = concatBytes(frames);
      if (bytes.length === 0) return;
      const torn = bytes.subarray(0, cut % bytes.length);
      let whole = 0;
      let length = 0;
      for (const f of frames) {
        if (length + f.length > torn.length) break;
        length += f.length;
        whole++;
      }
      const parsed = parseSegment(torn, 0);
      assert.equal(parsed.batches.length, whole);
      assert.equal(parsed.validLength, length);
      assert.ok(length === 0 || length >= HEADER + TRAILER);
    }),
    500,
  );
});

Deno.test("property: the last frame found from a segment's end is its last batch, and nothing when torn", () => {
  check(
    fc.property(segment, fc.nat(), (batches, cut) => {
      const frames = batches.map(frame);
      const bytes = concatBytes(frames);
      assert.deepEqual(lastFrameIn(bytes), batches.at(-1));
      if (bytes.length === 0) return;
      // A cut inside a frame leaves no whole last frame; one between frames leaves the one before.
      const end = cut % bytes.length;
      let boundary = 0;
      let before: LedgerEntry[] | undefined;
      for (const [i, f] of frames.entries()) {
        if (boundary + f.length > end) break;
        boundary += f.length;
        before = batches[i];
      }
      assert.deepEqual(lastFrameIn(bytes.subarray(0, end)), boundary === end ? before : undefined);
    }),
    500,
  );
});
