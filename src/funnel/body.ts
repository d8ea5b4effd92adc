import { BODY_TIMEOUT_MS, HttpProblem, readBody } from "../http/mod.ts";

/** Largest accepted request body, in bytes (decisions.md). */
export const MAX_BODY_BYTES = 64 * 1024;

/** How long a POST body may take to arrive, ms (the shared request-body deadline). */
export { BODY_TIMEOUT_MS };

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
  const bytes = await readBody(request, { maxBytes: MAX_BODY_BYTES, timeoutMs });
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
