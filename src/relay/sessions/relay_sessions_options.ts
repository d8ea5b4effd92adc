import type { Verifier } from "../../auth/mod.ts";
import type { TrackPatterns } from "../../path/mod.ts";
import type { Timers } from "../../timers/mod.ts";
import type { RelayCore } from "../routing/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import type { PeerGoaway } from "./peer_session.ts";

/** Options of `RelaySessions`. */
export interface RelaySessionsOptions {
  /** Routing and fan-out. */
  readonly core: RelayCore;
  /** Metrics. */
  readonly metrics: RelayMetrics;
  /** Credential verifier; undefined admits every session. */
  readonly verifier: Verifier | undefined;
  /** GROUP_CACHE_SIZE: also each subscriber's queue bound before it is skipped forward. */
  readonly cacheSize: number;
  /** This relay's hop id: the origin of every session, so announcements never loop back. */
  readonly hopId: bigint;
  /** Clock in ms. */
  readonly now: () => number;
  /** RELAY_DATAGRAM_TRACKS: tracks whose single-frame groups go to clients as datagrams. */
  readonly datagramTracks?: TrackPatterns;
  /** RELAY_DELIVERY_TURN_MS: delivery per turn shared by every session's subscriptions (0: no turns). */
  readonly deliveryTurnMs?: number;
  /** Interval of the RTT ping of peer sessions in ms (0 disables; default 10000). */
  readonly rttIntervalMs?: number;
  /** Longest wait for session bookkeeping at stop, ms (default 5000). */
  readonly stopTimeoutMs?: number;
  /** Timers of the RTT pings and of the waits at stop (default the system's). */
  readonly timers?: Timers;
  /** A peer's session sent GOAWAY (`uri` empty when it named no other relay). */
  readonly onPeerGoaway?: (goaway: PeerGoaway) => void;
  /** Logs a line. */
  readonly log: (line: string) => void;
}
