import { HttpProblem } from "../http/mod.ts";
import { Deadlines } from "../timers/mod.ts";
import { concatBytes } from "../wire/mod.ts";

/** Largest accepted request body, in bytes (decisions.md). */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * How long a request body may take to arrive once its headers did, in ms.
 * Deno.serve has no read timeout of its own, so a sender that trickles (or
 * never finishes) its body would otherwise hold the request open forever.
 */
export const BODY_TIMEOUT_MS = 10_000;

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Reads a request body that must be exactly one JSON value in valid UTF-8,
 * and returns its text with surrounding white space removed (the value's
 * bytes are otherwise kept exactly as posted). Throws {@link HttpProblem}
 * 413 past {@link MAX_BODY_BYTES}, 400 for anything that is not one JSON
 * value, and 408 (with `Connection: close`) when the body takes longer than
 * `timeoutMs` to arrive.
 */
export async function readJsonBody(
  request: Request,
  timeoutMs: number = BODY_TIMEOUT_MS,
): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > MAX_BODY_BYTES) {
    throw new HttpProblem(413, `The body is larger than ${MAX_BODY_BYTES} bytes`);
  }
  const bytes = await withDeadline(readCapped(request, declared !== null), timeoutMs);
  let text: string;
  try {
    text = decodeUtf8(bytes);
  } catch {
    throw new HttpProblem(400, "The body is not valid UTF-8");
  }
  if (text.charCodeAt(0) === 0xfeff) {
    throw new HttpProblem(400, "The body starts with a byte order mark; send plain UTF-8 JSON");
  }
  const trimmed = text.trim();
  if (trimmed === "") throw new HttpProblem(400, "The body is empty; send one JSON value");
  try {
    JSON.parse(trimmed);
  } catch (error) {
    const why = error instanceof SyntaxError ? `: ${error.message}` : "";
    throw new HttpProblem(400, `The body is not exactly one JSON value${why}`);
  }
  return trimmed;
}

/** Largest body decoded by the pure-JS ASCII path (an op call costs more below this). */
const SMALL_ASCII = 512;

/** Strict UTF-8 decoding; small all-ASCII bodies (most records) skip the decoder's op call. */
function decodeUtf8(bytes: Uint8Array): string {
  if (bytes.length <= SMALL_ASCII) {
    let ascii = true;
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  }
  return decoder.decode(bytes);
}

async function readCapped(request: Request, declared: boolean): Promise<Uint8Array> {
  // With a declared length (already checked against the cap) Deno hands over
  // the whole body at once. Touching `request.body` first would build a
  // ReadableStream and lose that fast path (it doubled the cost of a POST).
  if (declared) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > MAX_BODY_BYTES) {
      throw new HttpProblem(413, `The body is larger than ${MAX_BODY_BYTES} bytes`);
    }
    return bytes;
  }
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = request.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > MAX_BODY_BYTES) {
        throw new HttpProblem(413, `The body is larger than ${MAX_BODY_BYTES} bytes`);
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return chunks.length === 1 ? chunks[0]! : concatBytes(chunks);
}

// Body reads in progress and their deadlines, on one timer: a timer per
// request would cost about 3 µs, a sixth of a POST's CPU. Unref'd, so it
// never keeps a process alive on its own.
const deadlines = new Deadlines({ unref: true });

/** `read`, or a 408 once `ms` pass first; the late read's outcome is dropped. */
async function withDeadline<T>(read: Promise<T>, ms: number): Promise<T> {
  let reject!: (error: unknown) => void;
  const late = new Promise<never>((_, r) => (reject = r));
  const cancel = deadlines.add(ms, () => {
    // The late read's outcome no longer matters. Deno.serve gives a handler
    // no way to close the connection (cancelling the body does not either):
    // it closes when the client finishes or leaves; a client that honours
    // `Connection: close` leaves at once.
    read.catch(() => {});
    reject(
      new HttpProblem(408, `The body did not arrive within ${ms / 1000} s`, {
        connection: "close",
      }),
    );
  });
  try {
    return await Promise.race([read, late]);
  } finally {
    cancel();
  }
}
