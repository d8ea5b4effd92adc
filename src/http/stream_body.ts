/** One piece of a response body: text (sent as UTF-8) or bytes. */
export type BodyChunk = string | Uint8Array;

/** Where a streamed body comes from: a stream, or any iterable or async iterable of chunks. */
export type BodySource = AsyncIterable<BodyChunk> | Iterable<BodyChunk>;

const encoder = new TextEncoder();

/**
 * The chunks of `source` as a byte stream, pulled only as fast as its reader
 * (the connection) takes them, with text encoded as UTF-8. Cancelling the
 * stream (the client went away) ends the source's iterator.
 *
 * @example
 * ```ts
 * const body = byteStream((function* () { yield "a,"; yield "b\n"; })());
 * ```
 */
export function byteStream(source: BodySource): ReadableStream<Uint8Array> {
  const iterator: AsyncIterator<BodyChunk> | Iterator<BodyChunk> = Symbol.asyncIterator in source
    ? source[Symbol.asyncIterator]()
    : source[Symbol.iterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      // Empty chunks carry nothing: keep pulling until there is a byte to send.
      for (;;) {
        const next = await iterator.next();
        if (next.done) return controller.close();
        const chunk = next.value;
        if (chunk.length === 0) continue;
        controller.enqueue(
          typeof chunk === "string" ? encoder.encode(chunk) : chunk,
        );
        return;
      }
    },
    async cancel(reason): Promise<void> {
      await iterator.return?.(reason);
    },
  }, { highWaterMark: 0 });
}

/**
 * A response whose body is pulled from `source` as the client reads it
 * (history pages, metrics, heap snapshots), so a large body is never built
 * in memory. The first chunk is read before the response exists: a source
 * that fails at once (its storage is away) rejects here and can still be
 * answered with an error status, not a 200 cut short.
 *
 * @example
 * ```ts
 * return await streamResponse(registry.renderEach(), { headers: { "content-type": "text/plain" } });
 * ```
 */
export async function streamResponse(
  source: BodySource,
  init: ResponseInit = {},
): Promise<Response> {
  const reader = byteStream(source).getReader();
  const first = await reader.read();
  if (first.done) return new Response("", init);
  let pending: Uint8Array | undefined = first.value;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller): Promise<void> {
      if (pending) {
        controller.enqueue(pending);
        pending = undefined;
        return;
      }
      const next = await reader.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
  return new Response(body, init);
}
