/**
 * The state every part of a session shares (subscriptions, setup, budgets)
 * and the one place stream failures are contained: every stream runs in its
 * own task; a stream's failure (including the peer's malformed bytes) ends
 * that stream, is logged once per kind, and never escapes into the session
 * or the process.
 */
import { SessionSends } from "./session_sends.ts";
import { errorText } from "../../error_text/mod.ts";
import { Deadlines, systemTimers, type Timers } from "../../timers/mod.ts";
import type { RecvStream, Session, SessionCloseInfo } from "../../transport/mod.ts";
import type { Version } from "../codec/mod.ts";
import { MoqCode, MoqError } from "../errors.ts";
import type { MoqStats } from "../stats.ts";
import { DEFAULT_MAX_BUFFERED, ReceiveBudget } from "../track/mod.ts";
import { DecodeError, StreamReader } from "../../wire/mod.ts";
import type { MoqSession } from "./moq_session.ts";
import type { Subscription } from "./subscription.ts";
import type { MoqSessionOptions, ReceivedGroup, SessionPolicy } from "./types.ts";

/** A served subscription's group streams as the session's ordered ranks see them. */
export interface OrderedStreams {
  /** The place of its oldest stream still open, if any. */
  readonly oldestPlace: number | undefined;
  /** Gives its open streams their orders again (the base moved). */
  reorderOpen(): void;
}

/**
 * The expiry deadlines of every served subscription in the process on the system's timers.
 * A subscription arms one when a group stream starts and cancels it when its last stream
 * ends, which on a relay fanning out small groups is once per group per subscriber. A timer
 * of its own each time (set, then cleared) was about a seventh of the relay's busy CPU in a
 * profile of a fan-out to 100 subscribers; a deadline here is a heap entry, the one timer
 * behind them stays armed while any is pending and is cleared with the last, so an idle
 * subscription still holds no timer.
 */
// On the monotonic clock, as a timer of its own was: a deadline is a wait in ms, and on the wall
// clock a step back would hold every deadline pending then (and its subscription's later ones)
// for as long as the step. Groups are still aged on the wall clock (`expired`).
const STREAM_EXPIRY = new Deadlines();

/** Expiry deadlines pending in the process's shared queue (for tests of the bound and leaks). */
export function pendingStreamExpiries(): number {
  return STREAM_EXPIRY.size;
}

/** The close code for the peer's protocol violations. */
export const PROTOCOL_CODE = MoqCode.ProtocolViolation;

/** One session's internal state, shared by its setup, serving and consuming parts. */
export class SessionCore {
  /** The public session this state belongs to (handed to the application's callbacks). */
  readonly session: MoqSession;
  /** The underlying transport session. */
  readonly transport: Session;
  /** The negotiated moq-lite version. */
  readonly version: Version;
  /** Which side we are. */
  readonly role: "client" | "server";
  /** Our origin (hop) id. */
  readonly origin: bigint;
  /** Counters for metrics. */
  readonly stats: MoqStats;
  /** The application's options. */
  readonly options: MoqSessionOptions;
  /** The options' timers, or the system's. */
  readonly timers: Timers;
  /**
   * Where served group streams' expiry deadlines are set (see GroupStreams): the options'
   * timers, or else deadlines every session of the process shares on one timer.
   */
  readonly expiryTimers: Timers;
  /** The hooks that answer the session's questions: the options', or what `admit` returned. */
  policy: SessionPolicy;
  /** Aborted when the session ends. */
  readonly abort: AbortController = new AbortController();
  /** Our open subscriptions to the peer's tracks, by subscribe id. */
  readonly subs: Map<bigint, Subscription> = new Map();
  /** Resolves once the peer's SETUP arrived (lite-05), or there is none to wait for. */
  readonly setupReceived: Promise<void>;
  /** Marks the setup as done. */
  resolveSetup!: () => void;
  /** Hands the peer's GOAWAY URI to `session.goaway`. */
  resolveGoaway: (uri: string) => void = () => {};
  /** The URL the client dialed: the transport's, or (native QUIC lite-05) the SETUP Path. */
  url: URL | undefined;
  /** The id our next subscription gets. */
  nextSubscribeId = 0n;
  /** The place of the next group stream of an ordered subscription (see GroupStreams); never wraps. */
  orderedPlace = 0;
  /** The place ordered subscriptions' ranks count from (moved on by `rebase` in send_order.ts). */
  orderedBase = 0;
  /** The served subscriptions with ordered group streams open: reordered when the base moves. */
  readonly orderedOpen: Set<OrderedStreams> = new Set();
  /** True once the peer opened its Setup stream. */
  setupSeen = false;
  /** Bytes of partially received groups held, under `maxBufferedBytes`. */
  readonly budget: ReceiveBudget;
  /** Payload bytes of the groups being sent now, across the subscriptions we serve. */
  readonly sends: SessionSends = new SessionSends(() => this.policy.maxSessionBytesInFlight);
  /** How we closed the session, when we did. */
  closeInfo: SessionCloseInfo | undefined;
  // Made at the first log line: most sessions never log.
  #logged: Set<string> | undefined;

  /** Takes the session's already-negotiated identity. */
  constructor(session: MoqSession, options: MoqSessionOptions) {
    this.session = session;
    this.transport = session.transport;
    this.version = session.version;
    this.role = session.role;
    this.origin = session.origin;
    this.stats = session.stats;
    this.options = options;
    this.timers = options.timers ?? systemTimers;
    this.expiryTimers = options.timers ?? STREAM_EXPIRY.timers;
    this.policy = options;
    this.url = session.transport.url;
    this.budget = new ReceiveBudget(options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED, this.timers);
    this.setupReceived = new Promise((resolve) => {
      this.resolveSetup = resolve;
    });
  }

  /** True once the session ended. */
  get isClosed(): boolean {
    return this.abort.signal.aborted;
  }

  /** Ends everything that depends on the session (idempotent). */
  shutdown(info: SessionCloseInfo): void {
    if (this.abort.signal.aborted) return;
    this.abort.abort();
    this.budget.close(new MoqError("closed", "Session closed"));
    // A session the server refused (its credential) says so to every subscription on it.
    const err = new MoqError(
      info.code === MoqCode.Unauthorized ? "unauthorized" : "closed",
      `Session closed (${info.code}${info.reason ? ` ${info.reason}` : ""})`,
    );
    for (const sub of this.subs.values()) sub._end(err);
    this.subs.clear();
    this.resolveSetup();
  }

  /** Logs a diagnostic once per kind. */
  log(kind: string, message: string): void {
    const logged = this.#logged ??= new Set();
    if (logged.has(kind)) return;
    logged.add(kind);
    (this.options.log ?? console.warn)(`moq ${this.version} ${this.transport.remote}: ${message}`);
  }

  /** A stream failed: count peer faults, log once per kind, never throw. */
  streamFailed(kind: string, err: unknown): void {
    if (this.isClosed) return;
    if (
      err instanceof DecodeError || (err instanceof MoqError && err.code === "protocol_violation")
    ) {
      this.stats.protocolErrors++;
      this.log(`decode:${kind}`, `${kind} stream ended: ${errorText(err)}`);
    } else {
      this.log(`error:${kind}`, `${kind} stream failed: ${errorText(err)}`);
    }
  }

  /** The peer broke the protocol in a way that ends the whole session. */
  violation(message: string): void {
    this.stats.protocolErrors++;
    this.log("violation", `closing: ${message}`);
    this.session.close(PROTOCOL_CODE, message);
  }

  /** Reads a stream, counting received bytes. */
  reader(stream: RecvStream): StreamReader {
    return new StreamReader(stream.readable, (n) => {
      this.stats.bytesReceived += n;
    });
  }

  /** Runs a stream's task on its own; its failure is contained by {@linkcode streamFailed}. */
  spawn(kind: string, task: Promise<void>): void {
    task.catch((err) => this.streamFailed(kind, err));
  }

  /** Hands a complete received group to its subscription, counting what it skipped. */
  deliver(sub: Subscription, group: ReceivedGroup): void {
    this.stats.groupsReceived++;
    const before = sub.skipped;
    sub._deliver(group);
    this.stats.groupsSkipped += sub.skipped - before;
  }
}
