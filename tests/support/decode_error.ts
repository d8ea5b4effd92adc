/** Test helper shared by the wire and moq codec tests. */
import assert from "node:assert/strict";
import { DecodeError } from "../../src/wire/mod.ts";

/** Asserts that `fn` throws a DecodeError, of `kind` when given. */
export function assertDecodeError(fn: () => unknown, kind?: DecodeError["code"]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof DecodeError, `expected DecodeError, got ${err}`);
    if (kind) assert.equal(err.code, kind);
    return true;
  });
}
