import { fromWebTransportStreamError } from "./stream_error.ts";

/**
 * Re-exposes a WT stream's remaining bytes (after its header) as a fresh,
 * undisturbed byte stream: first `initial` (bytes already read past the
 * header), then the rest of `reader`. Its errors come out translated: a
 * peer reset is a WebTransportStreamError carrying the application code, a
 * lost connection a SessionClosedError. Cancelling it sends STOP_SENDING.
 */
export function recvStream(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  initial?: Uint8Array,
): ReadableStream<Uint8Array> {
  let first = initial !== undefined && initial.length > 0 ? initial.slice() : undefined;
  return new ReadableStream({
    type: "bytes",
    async pull(controller: ReadableByteStreamController) {
      if (first) {
        controller.enqueue(first as Uint8Array<ArrayBuffer>);
        first = undefined;
        return;
      }
      try {
        const { value, done } = await reader.read();
        if (done) {
          controller.close();
          controller.byobRequest?.respond(0);
        } else if (value.length > 0) {
          controller.enqueue(value as Uint8Array<ArrayBuffer>);
        }
      } catch (err) {
        controller.error(fromWebTransportStreamError(err));
      }
    },
    cancel(reason) {
      // Cancelling a stream that already ended or failed has nothing left to report.
      return reader.cancel(reason).catch(() => {});
    },
  });
}
