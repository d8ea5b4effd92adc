// A history page whose body a funnel cut off (its ledger failed after the first records were
// sent) is a failed read the client retries, not a page and not a final error. The server is
// a real HTTP server that sends the start of a page and then fails the body, as the funnel
// does when a page fails after its first chunk.
import assert from "node:assert/strict";
import { history, NetworkError } from "../../src/client/mod.ts";
import { retryable } from "../../src/client/errors.ts";

Deno.test("a history page cut off mid-body is a retryable network error", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(
          new TextEncoder().encode(`{"records":[{"group":"e000001-g00000000","wallclock":1`),
        );
      },
      pull(controller) {
        controller.error(new Error("the ledger stopped answering"));
      },
    });
    return new Response(body, { headers: { "content-type": "application/json" } });
  });
  try {
    const track = `http://127.0.0.1:${server.addr.port}/tracks/room/1/chat`;
    const error = await history(track).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof NetworkError, `got ${error}`);
    assert.ok(retryable(error));
  } finally {
    await server.shutdown();
  }
});
