/** The public shapes of a moq-lite session's options, requests and received groups. */
import type { LiveFrames, TrackProducer } from "../track/mod.ts";
import type { Timers } from "../../timers/mod.ts";
import type { DeliveryTurns } from "./delivery_turns.ts";
import type { Announcer } from "../announcer.ts";
import type { MoqPeer } from "../peer.ts";

/** What the peer asks to be served. */
export interface ServeRequest {
  /**
   * "track" (lite-05 TRACK), "subscribe", "fetch", or "status" (IETF
   * TRACK_STATUS: answered from the source, which no cursor reads).
   */
  readonly kind: "track" | "subscribe" | "fetch" | "status";
  /** Canonical broadcast path. */
  readonly path: string;
  /** Track name. */
  readonly track: string;
  /** The session asking (its `url` carries the client's query, e.g. `jwt`). */
  readonly session: MoqPeer;
  /** The first group a SUBSCRIBE asks for, when it names one. */
  readonly start?: number;
}

/**
 * The application's answer: a source to serve from, or a refusal
 * ("too_many": the session asked more of the server than it will do now,
 * such as more lookups of unknown tracks than its budget; asking later may
 * succeed).
 */
export type ServeDecision = TrackProducer | "not_found" | "unauthorized" | "too_many" | undefined;

/** Decides per request whether and from which source to serve. */
export type ServeHandler = (request: ServeRequest) => ServeDecision | Promise<ServeDecision>;

/**
 * What a session may do: the questions it asks the application, each
 * answered by the value a hook returns. Given in the session's options, or
 * per session by {@linkcode MoqAcceptOptions.admit}.
 */
export interface SessionPolicy {
  /** Serves the peer's TRACK / SUBSCRIBE / FETCH requests; default: nothing is served. */
  readonly serve?: ServeHandler;
  /** Which of our announcements this peer may see (default all). */
  readonly announceFilter?: (path: string, session: MoqPeer) => boolean;
  /** Which of the peer's announcements we accept (default all); refused ones are counted. */
  readonly acceptAnnounce?: (path: string, session: MoqPeer) => boolean;
  /**
   * Which served tracks may travel as datagrams (lite-05, native QUIC and
   * WebTransport only): a group of such a track that is one frame and fits
   * a datagram is sent as one instead of on a stream; any other group still
   * takes a stream. Datagrams are not retransmitted: a subscriber must be
   * able to repair a lost one (FETCH). Default: none.
   */
  readonly datagrams?: (path: string, track: string, session: MoqPeer) => boolean;
  /**
   * Payload bytes of groups the session sends at once across all the
   * subscriptions it serves (default `SESSION_BYTES_IN_FLIGHT`, 64 MiB;
   * `Infinity`: no bound beyond each subscription's). A relay lifts it for
   * its peers, whose one session carries every track between two relays.
   */
  readonly maxSessionBytesInFlight?: number;
}

/**
 * Broadcasts one announce stream follows at once by default: a mesh peer
 * announces every route it has, so this is well past what a mesh carries,
 * and still bounds what one session can make its peer keep.
 */
export const MAX_ANNOUNCED = 65_536;

/** Options for {@linkcode connect} and {@linkcode accept}. */
export interface MoqSessionOptions extends SessionPolicy {
  /** Closes the session when aborted. */
  readonly signal?: AbortSignal;
  /**
   * Timers of the session's waits: SETUP, a finished subscription's stragglers, group expiry
   * and the serving loops' wake-ups (default the system's).
   */
  readonly timers?: Timers;
  /** Our origin (hop) id; default a random 53-bit value (JS peers read hops as 53-bit). */
  readonly origin?: bigint;
  /** Broadcasts to announce to the peer; default a private announcer (see `session.announce`). */
  readonly announcer?: Announcer;
  /** Per-subscriber queue bound in groups before skipping to the latest (default 16). */
  readonly maxGroupQueue?: number;
  /**
   * Broadcasts the peer may have announced at once on one announce stream
   * (default {@linkcode MAX_ANNOUNCED}); past it, more are refused as
   * `acceptAnnounce` refuses (counted, logged once) until some are withdrawn.
   */
  readonly maxAnnounced?: number;
  /** Largest frame accepted from the peer (default 32 MiB: a 16 MiB stream append as a record). */
  readonly maxFrameSize?: number;
  /** Largest group accepted from the peer (default 64 MiB). */
  readonly maxGroupSize?: number;
  /** Bytes of partially received groups held at once per session (default 128 MiB). */
  readonly maxBufferedBytes?: number;
  /**
   * Concurrent group streams per served subscription (default 16); a live
   * group waiting for frames holds none, but at most 4 times this many are
   * open.
   */
  readonly maxGroupsInFlight?: number;
  /**
   * Payload bytes of the open group streams per served subscription
   * (default 8 MiB; a live group's frames count as they are written; a group
   * starts while none is open, however large): a subscriber that reads
   * slowly holds at most this much of groups the track's cache has already
   * let go.
   */
  readonly maxBytesInFlight?: number;
  /**
   * Turns the served subscriptions share, for fairness under overload: one
   * instance for all the sessions of a process (default none: every loop
   * sends whenever it can).
   */
  readonly deliveryTurns?: DeliveryTurns;
  /**
   * How long a served subscription waits for a group missing below the
   * highest sent before telling the subscriber it is dropped, ms (default
   * 2000). A group that arrives later is still sent.
   */
  readonly lateGroupWaitMs?: number;
  /** Where diagnostics go (default console.warn); each kind is logged once per session. */
  readonly log?: (message: string) => void;
}

/** Options only for {@linkcode accept}. */
export interface MoqAcceptOptions extends MoqSessionOptions {
  /** How long to wait for a native-QUIC lite-05 client's SETUP (its URL), ms (default 10 s). */
  readonly setupTimeout?: number;
  /**
   * Decides whether to admit the session once its URL is known, before any
   * request is served. Returning false (or throwing) closes it with code 6
   * (unauthorized); returning a {@linkcode SessionPolicy} admits it with
   * those hooks, built from what admission found (a credential's grant),
   * in place of the options' own.
   */
  readonly admit?: (session: MoqPeer) => AdmitDecision | Promise<AdmitDecision>;
}

/**
 * What `admit` decides: refuse the session (false), admit it as its options
 * say (true), or admit it with this policy (hooks it names replace the
 * options' own).
 */
export type AdmitDecision = boolean | SessionPolicy;

/** A group received from the peer. */
export interface ReceivedGroup {
  /**
   * With {@linkcode SubscribeOptions.partial} (or {@linkcode FetchOptions.partial}):
   * the group while it is still arriving (`frames` is then the frames so far);
   * undefined for a group delivered complete.
   */
  readonly live?: LiveFrames;
  /** Absolute group sequence. */
  readonly sequence: number;
  /** The frames, in order. */
  readonly frames: Uint8Array[];
  /**
   * Timestamp of the first frame in the track timescale (lite-05), else 0,
   * as a number: approximate above 2^53.
   */
  readonly timestamp: number;
  /** The same timestamp, exact (nanosecond timescales exceed 2^53). */
  readonly exactTimestamp: bigint;
}

/** Options for {@linkcode MoqSession.fetch}. */
export interface FetchOptions {
  /** The request's priority, 0..255 (default 0). */
  readonly priority?: number;
  /** Cancels the request; once the group was handed over, the rest of it (it is then reset). */
  readonly signal?: AbortSignal;
  /**
   * Answer with a group still being written at its first frame (cut-through):
   * its {@linkcode ReceivedGroup.live} then follows the rest and ends "done"
   * or "reset" (default false: the group is answered complete).
   */
  readonly partial?: boolean;
}

/** Options for {@linkcode MoqSession.subscribe}. */
export interface SubscribeOptions {
  /** Ends the subscription when aborted (iteration then simply stops). */
  readonly signal?: AbortSignal;
  /** Subscriber priority 0..255 (default 0). */
  readonly priority?: number;
  /** First group wanted (default: latest). */
  readonly start?: number;
  /** Oldest group first when the link is congested (default false: newest first). */
  readonly ordered?: boolean;
  /**
   * Groups older than this many ms (and not the latest) are not sent, or
   * reset when already sent (default 0: the publisher's).
   */
  readonly maxLatency?: number;
  /**
   * Deliver each group as soon as its first frame arrives (cut-through):
   * the group's {@linkcode ReceivedGroup.live} then follows the rest, and
   * ends "done" or "reset" (default false: groups are delivered complete).
   */
  readonly partial?: boolean;
  /** Last group wanted, inclusive (default: unbounded). */
  readonly end?: number;
  /**
   * Groups held for a reader that has not taken them yet before the oldest is
   * dropped (default: the session's `maxGroupQueue`, else 64). A reader that
   * never waits (a relay) sets it high: retransmitted groups can land in a burst.
   */
  readonly queueLimit?: number;
}
