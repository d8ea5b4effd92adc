import assert from "node:assert/strict";
import { errorStack, errorText } from "../../src/error_text/mod.ts";

Deno.test("errorText gives an error's message and any other thrown value as text", () => {
  assert.equal(
    errorText(new RangeError('Port "70000" is out of range')),
    'Port "70000" is out of range',
  );
  assert.equal(errorText("plain"), "plain");
  assert.equal(errorText(42), "42");
  assert.equal(errorText(undefined), "undefined");
});

Deno.test("errorStack prefers the stack and falls back to the message", () => {
  const err = new Error("boom");
  assert.equal(errorStack(err), err.stack);
  assert.match(errorStack(err), /boom/);
  const bare = new Error("no stack");
  delete bare.stack;
  assert.equal(errorStack(bare), "no stack");
  assert.equal(errorStack({ toString: () => "odd" }), "odd");
});
