import { fromWebTransportStreamError } from "./stream_error.ts";

// A default read of the stream (no buffer of the reader's) reads into one of
// ours: it starts small and doubles while reads fill it, as the wire stream
// reader's BYOB reads do, so an idle stream read that way pins 512 B, not 64 KiB.
const FIRST_READ = 512;
const LARGEST_READ = 64 * 1024;

/**
 * Re-exposes a WT stream's remaining bytes (after its header) as a fresh,
 * undisturbed byte stream: first `initial` (bytes already read past the
 * header), then the rest of `reader`. Its errors come out translated: a
 * peer reset is a WebTransportStreamError carrying the application code, a
 * lost connection a SessionClosedError. Cancelling it sends STOP_SENDING.
 *
 * Given a BYOB reader (Deno's QUIC receive streams are byte streams), a BYOB
 * read of the result reads straight into its reader's buffer, so a pending
 * read holds that buffer only. A default reader's reads each hold a 64 KiB
 * buffer in Deno's QUIC streams while they wait.
 */
export function recvStream(
  reader: ReadableStreamBYOBReader | ReadableStreamDefaultReader<Uint8Array>,
  initial?: Uint8Array,
): ReadableStream<Uint8Array> {
  let first = initial !== undefined && initial.length > 0 ? initial.slice() : undefined;
  let readSize = FIRST_READ;
  return new ReadableStream({
    type: "bytes",
    async pull(controller: ReadableByteStreamController) {
      if (first) {
        controller.enqueue(first as Uint8Array<ArrayBuffer>);
        first = undefined;
        return;
      }
      try {
        const request = controller.byobRequest;
        if (reader instanceof ReadableStreamBYOBReader && request?.view) {
          await readInto(reader, request, controller);
          return;
        }
        let value: Uint8Array | undefined;
        let done: boolean;
        if (reader instanceof ReadableStreamBYOBReader) {
          const size = readSize;
          ({ value, done } = await reader.read(new Uint8Array(size)));
          if (value?.length === size && size < LARGEST_READ) readSize = size * 2;
        } else {
          ({ value, done } = await reader.read());
        }
        if (done || value === undefined) {
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

// Reads into the consumer's own buffer: the view moves to `reader` and comes
// back (same memory, no copy) with what it read.
async function readInto(
  reader: ReadableStreamBYOBReader,
  request: ReadableStreamBYOBRequest,
  controller: ReadableByteStreamController,
): Promise<void> {
  let view = request.view as Uint8Array<ArrayBuffer>;
  const length = view.byteLength;
  for (;;) {
    const { value, done } = await reader.read(view);
    if (done) {
      controller.close();
      request.respondWithNewView(value ?? new Uint8Array(0));
      return;
    }
    if (value.byteLength > 0) {
      request.respondWithNewView(value);
      return;
    }
    // An empty read (not the end): read again into the same memory.
    view = new Uint8Array(value.buffer, value.byteOffset, length);
  }
}
