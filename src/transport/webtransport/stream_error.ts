import { fromDenoQuicError, peerStreamErrorCode } from "../quic/mod.ts";
import { WebTransportStreamError, wtErrorFromHttp3 } from "./errors.ts";

/**
 * The WebTransport application error code in a stream error raised by a
 * peer's RESET_STREAM or STOP_SENDING on a WT stream, or undefined when the
 * error carries none (e.g. the connection was lost).
 */
export function streamErrorCode(err: unknown): number | undefined {
  const h3 = peerStreamErrorCode(err);
  if (h3 === undefined) return undefined;
  return wtErrorFromHttp3(h3) ?? 0;
}

/**
 * Translates what a WT stream operation threw into the transport's neutral
 * errors: a peer's reset or stop becomes a {@linkcode WebTransportStreamError}
 * with the WebTransport code, a lost connection a `SessionClosedError`.
 */
export function fromWebTransportStreamError(err: unknown): unknown {
  return fromDenoQuicError(err, (kind, h3, _message, cause) => {
    const code = wtErrorFromHttp3(h3) ?? 0;
    return new WebTransportStreamError(
      kind,
      code,
      `Stream ${kind === "reset" ? "reset" : "stopped"} by peer with code ${code}`,
      { cause },
    );
  });
}
