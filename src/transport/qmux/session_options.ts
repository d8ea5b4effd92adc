import type { Timers } from "../../timers/mod.ts";
import type { TransportParams } from "./params.ts";
import { usesRecords, type WireFormat } from "./subprotocol.ts";

/** Our transport parameters unless told otherwise. */
export const DEFAULT_PARAMS: TransportParams = {
  maxIdleTimeout: 30_000,
  initialMaxData: 1 << 20,
  initialMaxStreamDataBidiLocal: 256 * 1024,
  initialMaxStreamDataBidiRemote: 256 * 1024,
  initialMaxStreamDataUni: 256 * 1024,
  initialMaxStreamsBidi: 100,
  // moq-lite opens a uni stream per group, as on our QUIC listener.
  initialMaxStreamsUni: 1000,
  maxDatagramFrameSize: 16382,
  maxRecordSize: 65_536,
  resetStreamAt: false,
};

/** Options of {@linkcode QMuxSession}. */
export interface QMuxSessionOptions {
  /** Which end we are: "client" dialed, "server" accepted. */
  readonly role: "client" | "server";
  /** The negotiated Sec-WebSocket-Protocol value, e.g. "qmux-02.moq-lite-05". */
  readonly subprotocol: string;
  /** The URL the client dialed (path and query). */
  readonly url?: URL;
  /** The peer's address as host:port. */
  readonly remote: string;
  /** Our transport parameters, over {@linkcode DEFAULT_PARAMS}. */
  readonly params?: Partial<TransportParams>;
  /** Socket bytes in flight above which writes wait (default 256 KiB). */
  readonly highWater?: number;
  /** Wall clock in ms (tests). */
  readonly now?: () => number;
  /**
   * Ends the session when the peer's first message (its transport
   * parameters, in every QMux draft) has not arrived within this many ms
   * (default none): a server's bound on how long an upgraded connection
   * may stay unestablished.
   */
  readonly setupTimeoutMs?: number;
  /** Timers for the setup deadline (tests). */
  readonly timers?: Timers;
}

/** Largest message of the legacy format and of qmux-00 (its max_frame_size). */
const LEGACY_MAX_MESSAGE = 16384 + 64;
const QMUX00_MAX_FRAME = 16384;

/**
 * Our transport parameters for a session: the options over
 * {@linkcode DEFAULT_PARAMS}; datagrams only where the format has records,
 * and never RESET_STREAM_AT.
 */
export function sessionParams(
  params: Partial<TransportParams> | undefined,
  format: WireFormat,
): TransportParams {
  return {
    ...DEFAULT_PARAMS,
    ...params,
    maxDatagramFrameSize: usesRecords(format) ? params?.maxDatagramFrameSize ?? 16382 : 0,
    resetStreamAt: false,
  };
}

/** Largest WebSocket message we accept in `format`, given our `max_record_size`. */
export function maxMessageSize(format: WireFormat, maxRecordSize: number): number {
  return usesRecords(format)
    ? maxRecordSize
    : format === "qmux-00"
    ? QMUX00_MAX_FRAME
    : LEGACY_MAX_MESSAGE;
}
