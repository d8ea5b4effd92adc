import assert from "node:assert/strict";
import { SessionClosedError, StreamError } from "../../src/transport/mod.ts";
import { quicPair } from "../support/quic_pair.ts";

/** Writes until the stream rejects (the peer stopped it); returns what it rejected with. */
async function writeUntilRejected(writable: WritableStream<Uint8Array>): Promise<unknown> {
  const w = writable.getWriter();
  for (let i = 0; i < 500; i++) {
    try {
      await w.write(new Uint8Array(1000));
    } catch (err) {
      return err;
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error("The stream kept accepting writes after the peer stopped it");
}

Deno.test("quic: a peer's STOP_SENDING is a StreamError with its code; the session lives on", async () => {
  const { client, server, stop } = await quicPair("moq-lite-05");
  try {
    const bidi = await client.openBidi();
    const w = bidi.writable.getWriter();
    await w.write(Uint8Array.of(1));
    w.releaseLock();
    const peer = (await server.acceptBidi())!;
    await peer.readable.cancel(); // STOP_SENDING 0
    const err = client.translateError(await writeUntilRejected(bidi.writable));
    assert.ok(err instanceof StreamError, String(err));
    assert.equal(err.code, "stream_stopped");
    assert.equal(err.wireCode, 0);
    assert.equal(client.translateError(err), err, "translating twice changes nothing");
    // Only that stream failed: the session still carries others.
    const uni = await client.openUni();
    const uw = uni.writable.getWriter();
    await uw.write(Uint8Array.of(7));
    await uw.close();
    const recv = (await server.acceptUni())!;
    assert.deepEqual(
      new Uint8Array(await new Response(recv.readable).arrayBuffer()),
      Uint8Array.of(7),
    );
  } finally {
    await stop();
  }
});

Deno.test("quic: reads on a closed session and opens after close are SessionClosedError", async () => {
  const { client, server, stop } = await quicPair("moq-lite-05");
  try {
    const bidi = await client.openBidi();
    const w = bidi.writable.getWriter();
    await w.write(Uint8Array.of(1));
    const peer = (await server.acceptBidi())!;
    const reader = peer.readable.getReader();
    await reader.read();
    client.close(7, "bye");
    const readErr = await reader.read().then(() => undefined, (e: unknown) => e);
    assert.ok(server.translateError(readErr) instanceof SessionClosedError, String(readErr));
    await assert.rejects(client.openUni(), SessionClosedError);
    // Anything that is not a transport condition comes back unchanged.
    const other = new RangeError("not a transport error");
    assert.equal(server.translateError(other), other);
  } finally {
    await stop();
  }
});
