// Property-based tests with fast-check, seeded so a run replays exactly.
// PROPERTY_SEED picks the seed (default fixed), PROPERTY_RUNS scales the runs;
// a failing property prints the seed and the shrunk counterexample.
import fc from "fast-check";

const DEFAULT_SEED = 0x5113ce;

/** The seed every property of this run uses (PROPERTY_SEED, else a fixed one). */
export const PROPERTY_SEED: number = readInt("PROPERTY_SEED") ?? DEFAULT_SEED;
const RUN_SCALE = readInt("PROPERTY_RUNS_SCALE") ?? 1;

function readInt(name: string): number | undefined {
  const text = Deno.env.get(name);
  if (text === undefined || text === "") return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new TypeError(`${name} "${text}" is not an integer`);
  return n;
}

/** Runs a property with the run's seed; a failure's message names the seed to replay. */
export function check<Ts extends [unknown, ...unknown[]]>(
  property: fc.IProperty<Ts>,
  runs = 1000,
): void {
  try {
    fc.assert(property, { seed: PROPERTY_SEED, numRuns: runs * RUN_SCALE });
  } catch (err) {
    throw new Error(`Property failed; replay with PROPERTY_SEED=${PROPERTY_SEED}`, {
      cause: err,
    });
  }
}

/** Async variant of {@link check}. */
export async function checkAsync<Ts extends [unknown, ...unknown[]]>(
  property: fc.IAsyncProperty<Ts>,
  runs = 300,
): Promise<void> {
  try {
    await fc.assert(property, { seed: PROPERTY_SEED, numRuns: runs * RUN_SCALE });
  } catch (err) {
    throw new Error(`Property failed; replay with PROPERTY_SEED=${PROPERTY_SEED}`, {
      cause: err,
    });
  }
}

/** An error class a decoder may throw for bad input. */
// deno-lint-ignore no-explicit-any
export type ErrorClass = abstract new (...args: any[]) => Error;

/**
 * Runs `decode`; returns its value, or undefined when it threw one of
 * `allowed`. Anything else thrown (a TypeError from a missed check, a
 * RangeError from a bad index) fails the property with the input in hex.
 */
export function decodesOrRefuses<T>(
  decode: () => T,
  allowed: readonly ErrorClass[],
  input?: Uint8Array | string,
): T | undefined {
  try {
    return decode();
  } catch (err) {
    if (allowed.some((cls) => err instanceof cls)) return undefined;
    throw new Error(`Decoder threw ${String(err)} for input ${describe(input)}`, { cause: err });
  }
}

/** Async variant of {@link decodesOrRefuses}. */
export async function decodesOrRefusesAsync<T>(
  decode: () => Promise<T>,
  allowed: readonly ErrorClass[],
  input?: Uint8Array | string,
): Promise<T | undefined> {
  try {
    return await decode();
  } catch (err) {
    if (allowed.some((cls) => err instanceof cls)) return undefined;
    throw new Error(`Decoder threw ${String(err)} for input ${describe(input)}`, { cause: err });
  }
}

function describe(input: Uint8Array | string | undefined): string {
  if (input === undefined) return "(not given)";
  if (typeof input === "string") return JSON.stringify(input.slice(0, 200));
  return Array.from(input.subarray(0, 200), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Bytes derived from a valid encoding the way a hostile or broken peer would:
 * truncated, with bytes flipped, inserted or deleted, or extended.
 */
export function mutated(valid: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  const edit = fc.oneof(
    fc.record({
      op: fc.constant("flip" as const),
      at: fc.nat(),
      bits: fc.integer({ min: 1, max: 255 }),
    }),
    fc.record({
      op: fc.constant("set" as const),
      at: fc.nat(),
      byte: fc.integer({ min: 0, max: 255 }),
    }),
    fc.record({
      op: fc.constant("insert" as const),
      at: fc.nat(),
      byte: fc.integer({ min: 0, max: 255 }),
    }),
    fc.record({ op: fc.constant("delete" as const), at: fc.nat() }),
    fc.record({ op: fc.constant("truncate" as const), at: fc.nat() }),
    fc.record({ op: fc.constant("append" as const), extra: fc.uint8Array({ maxLength: 16 }) }),
  );
  return fc.tuple(valid, fc.array(edit, { minLength: 1, maxLength: 4 })).map(([bytes, edits]) => {
    let out = Array.from(bytes);
    for (const e of edits) {
      const at = out.length === 0 ? 0 : ("at" in e ? e.at % out.length : 0);
      switch (e.op) {
        case "flip":
          if (out.length > 0) out[at] = (out[at]! ^ e.bits) & 0xff;
          break;
        case "set":
          if (out.length > 0) out[at] = e.byte;
          break;
        case "insert":
          out.splice(at, 0, e.byte);
          break;
        case "delete":
          out.splice(at, 1);
          break;
        case "truncate":
          out = out.slice(0, at);
          break;
        case "append":
          out.push(...e.extra);
          break;
      }
    }
    return Uint8Array.from(out);
  });
}

/** Arbitrary bytes, or bytes mutated from `valid`: what a decoder must survive. */
export function hostileBytes(
  valid: fc.Arbitrary<Uint8Array>,
  maxLength = 256,
): fc.Arbitrary<Uint8Array> {
  return fc.oneof(fc.uint8Array({ maxLength }), mutated(valid));
}

/**
 * An estimate of the memory a decoded value holds: bytes of strings (UTF-16),
 * byte arrays (their length; a view's backing buffer is the input's) and a
 * few bytes per number, key and array slot. Used to show that output stays
 * proportional to input.
 */
export function retainedSize(value: unknown): number {
  if (value === null || value === undefined) return 0;
  if (typeof value === "string") return value.length * 2;
  if (typeof value === "number" || typeof value === "boolean") return 8;
  if (typeof value === "bigint") return 16;
  if (value instanceof Uint8Array) return value.length;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + 8 + retainedSize(v), 0);
  if (value instanceof Map) {
    let n = 0;
    for (const [k, v] of value) n += 16 + retainedSize(k) + retainedSize(v);
    return n;
  }
  if (typeof value === "object") {
    let n = 0;
    for (const [k, v] of Object.entries(value)) n += 8 + k.length * 2 + retainedSize(v);
    return n;
  }
  return 8;
}

/** A byte stream (BYOB-capable like Deno's QUIC streams) that serves `bytes` in the given chunk sizes, then ends. */
export function chunkedStream(
  bytes: Uint8Array,
  cuts: readonly number[],
): ReadableStream<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let at = 0;
  for (const cut of cuts) {
    if (at >= bytes.length) break;
    const n = Math.max(1, cut);
    chunks.push(bytes.slice(at, at + n));
    at += n;
  }
  if (at < bytes.length) chunks.push(bytes.slice(at));
  return new ReadableStream({
    type: "bytes",
    pull(c) {
      const next = chunks.shift();
      if (next === undefined) {
        c.close();
        c.byobRequest?.respond(0);
        return;
      }
      c.enqueue(next);
    },
  });
}

export { fc };
