import type { SessionCloseInfo } from "../../transport/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import type { LiveSession } from "./session_routes.ts";
import { smoothRtt } from "./session_rtt.ts";

/** Labels of a session's counters. */
export interface SessionLabels {
  /** The transport's name. */
  readonly transport: string;
  /** "peer" or "client". */
  readonly class: string;
}

/** Adds what the session sent as datagrams (or fell back) since the last count. */
export function countDatagrams(m: RelayMetrics, l: LiveSession): void {
  const s = l.moq.stats;
  m.datagramGroupsTotal.inc({}, s.datagramsSent - l.counted.datagrams);
  m.datagramFallbacksTotal.inc({}, s.datagramFallbacks - l.counted.fallbacks);
  m.datagramTailRepeatsTotal.inc({}, s.datagramTailRepeats - l.counted.repeats);
  l.counted = {
    datagrams: s.datagramsSent,
    fallbacks: s.datagramFallbacks,
    repeats: s.datagramTailRepeats,
  };
}

/** Delivery rate since the previous scrape: a lower bound of the available bandwidth. */
export function estimateBitrate(m: RelayMetrics, l: LiveSession, now: number): void {
  const bytes = l.moq.stats.bytesSent;
  const dt = (now - l.lastAt) / 1000;
  if (dt <= 0) return;
  m.sessionEstimatedBitrateBps.set(
    { remote: l.remote },
    Math.round(((bytes - l.lastBytes) * 8) / dt),
  );
  l.lastBytes = bytes;
  l.lastAt = now;
}

/** Folds one RTT sample into the session's smoothed RTT and its metrics. */
export function sampleRtt(m: RelayMetrics, live: LiveSession, sample: number): void {
  live.srtt = smoothRtt(live.srtt, sample);
  m.sessionRttMs.set({ remote: live.remote }, Math.round(live.srtt * 1000) / 1000);
  m.sessionRttSeconds.observe({ remote: live.remote }, sample / 1000);
}

/**
 * Counts a session that ended: why, and the bytes it moved. `lastOfRemote`
 * drops the per-address series when no other session from there runs.
 */
export function countClosed(
  m: RelayMetrics,
  live: LiveSession,
  labels: SessionLabels,
  info: SessionCloseInfo,
  expired: boolean,
  lastOfRemote: boolean,
): void {
  // A fixed set of reasons: a peer must not mint label values with its close codes.
  const reason = expired
    ? "expired"
    : info.dropped
    ? "dropped"
    : info.code === 0
    ? "closed"
    : "error";
  m.sessionsClosedTotal.inc({ ...labels, reason });
  m.sessionBytesTotal.inc({ ...labels, direction: "sent" }, live.moq.stats.bytesSent);
  m.sessionBytesTotal.inc({ ...labels, direction: "received" }, live.moq.stats.bytesReceived);
  if (lastOfRemote) {
    m.sessionRttMs.remove({ remote: live.remote });
    m.sessionRttSeconds.remove({ remote: live.remote });
    m.sessionEstimatedBitrateBps.remove({ remote: live.remote });
  }
}
