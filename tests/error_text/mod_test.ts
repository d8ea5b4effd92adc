import assert from "node:assert/strict";
import { errorStack, errorText, redactUrl } from "../../src/error_text/mod.ts";

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

Deno.test("errorText redacts a credential in a URL the message quotes", () => {
  const e = new Error('Cannot open QMux to "wss://r:1/?peer=b&jwt=eyJ.a.b": refused');
  assert.equal(errorText(e), 'Cannot open QMux to "wss://r:1/?peer=b&jwt=REDACTED": refused');
  assert.equal(errorText("at moqt://r/?token=abc&x=1"), "at moqt://r/?token=REDACTED&x=1");
});

Deno.test("redactUrl replaces every credential parameter's value and keeps the rest", () => {
  assert.equal(
    redactUrl(new URL("moqt://relay:4433/live?peer=a&jwt=eyJ.x.y")),
    "moqt://relay:4433/live?peer=a&jwt=REDACTED",
  );
  assert.equal(redactUrl("not a url jwt=abc"), "not a url jwt=REDACTED");
});
