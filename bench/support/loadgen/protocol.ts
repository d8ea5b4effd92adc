/** Messages between the load generator and its subscriber workers. */

/** What a worker is told to do. */
export interface WorkerStart {
  readonly type: "start";
  /** Relay URL (moqt:// native QUIC, https:// WebTransport, wss:// WebSocket). */
  readonly url: string;
  /** SHA-256 of the relay certificate. */
  readonly certSha256: Uint8Array;
  /** The relay certificate, PEM (WebSocket trusts it as a root: it cannot pin a hash). */
  readonly certPem: string;
  /** Sessions this worker holds. */
  readonly sessions: number;
  /** Concurrent dials (the most in flight at once). */
  readonly concurrency: number;
  /** New dials per second this worker starts (0: as fast as `concurrency` allows). */
  readonly rampPerSecond: number;
  /** Broadcast path and track. */
  readonly path: string;
  readonly track: string;
  /** The raw baseline: bare QUIC connections, each group a uni stream of bytes (no moq). */
  readonly raw: boolean;
  /** Whether the worker sizes its QUIC socket's receive buffer as the relay does its own. */
  readonly udpReceiveBuffer: boolean;
  /** "quic", "webtransport" or "websocket". */
  readonly transport: "quic" | "webtransport" | "websocket";
}

/** Start or stop counting groups (the measurement window, by sequence). */
export interface WorkerWindow {
  readonly type: "window";
  readonly from: number;
  readonly to: number | undefined;
}

/** Close every session. */
export interface WorkerStop {
  readonly type: "stop";
}

/** Any message to a worker. */
export type ToWorker = WorkerStart | WorkerWindow | WorkerStop;

/** A worker's periodic report (latency counts since the previous report). */
export interface WorkerReport {
  readonly type: "report";
  /** Sessions subscribed and receiving. */
  readonly held: number;
  /** Sessions being set up. */
  readonly connecting: number;
  /** Sessions that failed or ended. */
  readonly failed: number;
  /** Groups received since the previous report. */
  readonly groups: number;
  /** Latency histogram counts (window groups only) since the previous report. */
  readonly latency: Uint32Array;
  /** Window groups received so far, summed over sessions held for the whole window. */
  readonly windowReceived: number;
  /** Sessions that were held for the whole window. */
  readonly windowSessions: number;
  /** Sessions set up (subscribed) since the previous report. */
  readonly setups: number;
  /** Set-up time histogram counts (dial to subscribed) since the previous report. */
  readonly setupLatency: Uint32Array;
  /** Handshake time histogram counts (dial to QUIC connection up) since the previous report. */
  readonly handshakeLatency: Uint32Array;
  /** Longest set-up and handshake since the previous report, ms (the histograms stop at 10 s). */
  readonly setupMaxMs: number;
  readonly handshakeMaxMs: number;
  /** Longest a 10 ms timer of this worker fired late since the previous report, ms (its busy loop). */
  readonly loopLagMaxMs: number;
  /** Local UDP ports of this worker's QUIC endpoints (for their drop counters). */
  readonly ports: number[];
  /** Failures by reason since the start (a bounded set of reasons). */
  readonly failures: Record<string, number>;
  /** First error text, if any. */
  readonly error?: string;
}

/** A worker finished closing. */
export interface WorkerStopped {
  readonly type: "stopped";
}

/** Any message from a worker. */
export type FromWorker = WorkerReport | WorkerStopped;

/** Most distinct failure reasons a worker keeps apart; the rest are counted as "other". */
export const MAX_FAILURE_REASONS = 16;

/**
 * A failure's reason for counting: the error text with numbers, addresses and
 * ids folded, so "Session closed (15 no SETUP)" from every session is one reason.
 */
export function failureReason(text: string): string {
  return text.replace(/\[[^\]]*\]|\b[0-9a-f]{8,}\b|\d+(\.\d+)*/gi, "#").slice(0, 100);
}

/** Reads the publisher's send time (ms since the epoch, float64 at offset 0) from a payload. */
export function sentAt(payload: Uint8Array): number {
  if (payload.byteLength < 8) return NaN;
  return new DataView(payload.buffer, payload.byteOffset, 8).getFloat64(0);
}

/** Wall clock in ms with sub-ms precision, comparable across workers of one host. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}
