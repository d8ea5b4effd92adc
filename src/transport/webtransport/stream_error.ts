import { peerStreamErrorCode, wtErrorFromHttp3 } from "./errors.ts";

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
