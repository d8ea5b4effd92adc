import assert from "node:assert/strict";
import { byteStream, streamResponse } from "../../src/http/mod.ts";
import { settled } from "../support/wait.ts";

/** A source that records how far it was pulled and whether it was ended. */
function counted(chunks: readonly (string | Uint8Array)[]) {
  const state = { produced: 0, finished: false };
  async function* source(): AsyncGenerator<string | Uint8Array> {
    try {
      for (const chunk of chunks) {
        state.produced++;
        yield chunk;
      }
    } finally {
      state.finished = true;
    }
  }
  return { state, source: source() };
}

Deno.test("byteStream pulls its source only as the reader reads, text as UTF-8", async () => {
  const { state, source } = counted(["héllo ", "", new Uint8Array([0x21]), "🌊"]);
  const reader = byteStream(source).getReader();
  await settled();
  assert.equal(state.produced, 0, "nothing is pulled before the first read");
  assert.deepEqual((await reader.read()).value, new TextEncoder().encode("héllo "));
  assert.equal(state.produced, 1);
  // The empty chunk is skipped, not sent.
  assert.deepEqual((await reader.read()).value, new Uint8Array([0x21]));
  assert.equal(state.produced, 3);
  assert.equal(new TextDecoder().decode((await reader.read()).value), "🌊");
  assert.equal((await reader.read()).done, true);
  assert.equal(state.finished, true);
});

Deno.test("streamResponse reads the first chunk before answering and passes failures up", async () => {
  const failing = (): AsyncIterable<string> => ({
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error("storage away")) }),
  });
  await assert.rejects(streamResponse(failing()), /storage away/);

  const { state, source } = counted(["{", '"a":1', "}"]);
  const response = await streamResponse(source, { headers: { "content-type": "x/y" } });
  assert.equal(state.produced, 1, "only the first chunk was read to answer");
  assert.equal(response.headers.get("content-type"), "x/y");
  assert.equal(await response.text(), '{"a":1}');

  const empty = await streamResponse([], { status: 200 });
  assert.equal(await empty.text(), "");
});

Deno.test("streamResponse ends its source when the client cancels the body", async () => {
  const { state, source } = counted(["a", "b", "c", "d"]);
  const response = await streamResponse(source);
  const reader = response.body!.getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), "a");
  await reader.cancel();
  assert.equal(state.finished, true, "the source's finally ran");
  assert.ok(state.produced < 4, "the rest was never produced");
});
