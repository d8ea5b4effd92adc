/**
 * What every MoQ session offers the application, whichever dialect it
 * speaks (moq-lite's {@linkcode MoqSession} or an IETF MoQ Transport
 * session): the relay and the policy hooks work on this, so a broadcast
 * crosses dialects without either side knowing the other's.
 */
import type { Session, SessionCloseInfo } from "../transport/mod.ts";
import type { AnnounceEvent, Announcement, Announcer } from "./announcer.ts";
import type { TrackInfo } from "./codec/mod.ts";
import type { MoqStats } from "./stats.ts";
import type { FetchOptions, ReceivedGroup, SubscribeOptions, Subscription } from "./session/mod.ts";

/** A running MoQ session of either dialect. */
export interface MoqPeer {
  /** The negotiated protocol: "moq-lite-05", "moq-lite-04" or an IETF draft ("moq-transport-14"). */
  readonly version: string;
  /** The underlying transport session. */
  readonly transport: Session;
  /** Our origin (hop) id. */
  readonly origin: bigint;
  /** Counters for metrics. */
  readonly stats: MoqStats;
  /** The broadcasts we announce to the peer. */
  readonly announcer: Announcer;
  /** Resolves when the session ends. */
  readonly closed: Promise<SessionCloseInfo>;
  /** Resolves with the new URI when the peer sends GOAWAY. */
  readonly goaway: Promise<string>;
  /** The URL the client dialed, when known. */
  readonly url: URL | undefined;
  /** The peer's address. */
  readonly remote: string;
  /** True once the session ended. */
  readonly isClosed: boolean;
  /** Ends the session with an application code and reason (idempotent). */
  close(code?: number, reason?: string): void;
  /** Subscribes to the peer's track. */
  subscribe(path: string, track: string, options?: SubscribeOptions): Subscription;
  /** Asks the peer for a track's properties. */
  trackInfo(path: string, track: string): Promise<TrackInfo>;
  /** Fetches one group of the peer's track. */
  fetch(path: string, track: string, group: number, options?: FetchOptions): Promise<ReceivedGroup>;
  /** Announces a broadcast to the peer. */
  announce(
    path: string,
    options?: { signal?: AbortSignal; hops?: readonly bigint[] },
  ): Announcement;
  /** Watches the peer's announcements under `prefix`. */
  announced(prefix?: string, options?: { signal?: AbortSignal }): AsyncIterable<AnnounceEvent>;
  /** Tells the peer to move to `uri` (GOAWAY). */
  sendGoaway(uri?: string): Promise<void>;
}
