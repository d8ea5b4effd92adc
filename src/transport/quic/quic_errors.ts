/**
 * Deno's QUIC errors translated into the transport's neutral errors
 * (errors.ts). Native QUIC and WebTransport (which runs on Deno's QUIC
 * streams) both translate with it.
 */
import { errorText } from "../../error_text/mod.ts";
import { SessionClosedError, StreamError, type StreamErrorKind } from "../errors.ts";

/** Makes the {@linkcode StreamError} for a peer's reset or stop carrying the QUIC-level `code`. */
export type StreamErrorFactory = (
  kind: StreamErrorKind,
  code: number,
  message: string,
  cause: unknown,
) => StreamError;

// Deno 2.9 words a peer's RESET_STREAM / STOP_SENDING as "stream reset by
// peer: error 9" / "sending stopped by peer: error 9" (both ConnectionReset).
const PEER_STREAM_ERROR = /(reset|stopped) by peer[^0-9]*error (\d+)/;

/**
 * Extracts the decimal error code from Deno's QUIC stream error messages
 * ("stream reset by peer: error 91141958510854", "sending stopped by peer: error 9").
 */
export function peerStreamErrorCode(err: unknown): number | undefined {
  const m = PEER_STREAM_ERROR.exec(errorText(err));
  return m?.[2] === undefined ? undefined : Number(m[2]);
}

const quicStreamError: StreamErrorFactory = (kind, code, message, cause) =>
  new StreamError(kind, code, message, { cause });

/**
 * Translates what a Deno QUIC operation threw: a peer's reset or stop
 * becomes a {@linkcode StreamError} (made by `streamError`, which may map the
 * code), a closed or lost connection a {@linkcode SessionClosedError}; the
 * message stays Deno's. Anything else, and an error already translated, is
 * returned as it is.
 */
export function fromDenoQuicError(
  err: unknown,
  streamError: StreamErrorFactory = quicStreamError,
): unknown {
  if (err instanceof StreamError || err instanceof SessionClosedError) return err;
  const message = errorText(err);
  const peer = PEER_STREAM_ERROR.exec(message);
  if (peer?.[2] !== undefined) {
    return streamError(peer[1] === "reset" ? "reset" : "stopped", Number(peer[2]), message, err);
  }
  if (
    err instanceof Deno.errors.NotConnected || err instanceof Deno.errors.ConnectionReset ||
    err instanceof Deno.errors.ConnectionAborted || err instanceof Deno.errors.BrokenPipe
  ) {
    return new SessionClosedError(message, { cause: err });
  }
  return err;
}
