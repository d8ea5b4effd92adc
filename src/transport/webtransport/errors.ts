import { SluiceError } from "../../errors/mod.ts";
import { StreamError, type StreamErrorKind } from "../errors.ts";

/** A CONNECT refused by the server: carries the HTTP status the server answered. */
export class WebTransportRefusedError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["refused"] as const;
  /** Stable code for callers that branch. */
  declare readonly code: "refused";
  /** HTTP status code of the refusal (e.g. 401, 403, 404, 400). */
  readonly status: number;
  /** Creates the error. */
  constructor(status: number, message?: string) {
    super("refused", message ?? `WebTransport session refused with status ${status}`);
    this.status = status;
  }
}

/**
 * The peer reset or stopped a WebTransport stream: a {@linkcode StreamError}
 * whose `code` is the WebTransport application code (already mapped back
 * from the HTTP/3 range).
 */
export class WebTransportStreamError extends StreamError {
  /** Creates the error. */
  constructor(kind: StreamErrorKind, code: number, message: string, options?: ErrorOptions) {
    super(kind, code, message, options);
  }
}

const WT_FIRST = 0x52e4a40fa8db;
const WT_LAST = 0x52e5ac983162;

/** Maps a 32-bit WebTransport application error code to its HTTP/3 code (draft-ietf-webtrans-http3 §4.4). */
export function wtErrorToHttp3(code: number): number {
  if (!Number.isInteger(code) || code < 0 || code > 0xffffffff) {
    throw new RangeError(`Cannot map WebTransport error code "${code}": not a 32-bit integer`);
  }
  return WT_FIRST + code + Math.floor(code / 0x1e);
}

/** Maps an HTTP/3 error code back to a WebTransport application code, or undefined when outside the range. */
export function wtErrorFromHttp3(h3: number): number | undefined {
  if (h3 < WT_FIRST || h3 > WT_LAST || (h3 - 0x21) % 0x1f === 0) return undefined;
  const d = h3 - WT_FIRST;
  return d - Math.floor(d / 0x1f);
}
