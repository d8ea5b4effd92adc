import { errorText } from "../../error_text/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import type { MoqSession } from "../../moq/mod.ts";
import type { SessionCloseInfo } from "../../transport/mod.ts";
import { DialBackoff } from "./dial_backoff.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import { SelfDialError } from "../sessions/mod.ts";

/** A peer session one dial produced, once the peer admitted it. */
export interface PeerSession {
  /** The moq session. */
  readonly moq: MoqSession;
  /** Resolves when the session ended. */
  readonly ended: Promise<SessionCloseInfo>;
  /** When its credential expires (ms since the epoch); undefined without one. */
  readonly expiresAt?: number;
}

/** Options of {@linkcode PeerLink}. */
export interface PeerLinkOptions {
  /** The `peer` label and log name: the address dialed, `host:port`. */
  readonly label: string;
  /** Dials the peer once; rejects when it cannot be reached or refuses the session. */
  readonly dial: () => Promise<PeerSession>;
  /** Metrics to count attempts and retries in. */
  readonly metrics: RelayMetrics;
  /** Timers for the backoff and credential renewal (default the global ones). */
  readonly timers?: Timers;
  /** Wall clock in ms (default Date.now). */
  readonly now?: () => number;
  /** The dial schedule (default: 1 s doubling to 30 s, ±25%). */
  readonly backoff?: DialBackoff;
  /** How long before its credential expires a session is replaced, ms (default 60000). */
  readonly renewBeforeMs?: number;
  /** Logs a line. */
  readonly log: (line: string) => void;
}

/**
 * Keeps one session with one peer address: dials, redials with
 * {@linkcode DialBackoff} after failures (one immediate redial after an
 * established session ends), renews the session shortly before its
 * credential expires (make-before-break), and counts every attempt in
 * `peer_dial_attempts_total{peer,result}` and every retry in
 * `dial_retries_total{peer}`.
 */
export class PeerLink {
  /** The address dialed, `host:port`. */
  readonly label: string;
  readonly #opts: PeerLinkOptions;
  readonly #timers: Timers;
  readonly #now: () => number;
  readonly #backoff: DialBackoff;
  readonly #sessions = new Set<PeerSession>();
  #timer: unknown;
  #renewal: unknown;
  #dialing = false;
  #started = false;
  #stopped = false;

  /** Prepares the link; {@linkcode start} dials. */
  constructor(options: PeerLinkOptions) {
    this.label = options.label;
    this.#opts = options;
    this.#timers = options.timers ?? systemTimers;
    this.#now = options.now ?? Date.now;
    this.#backoff = options.backoff ?? new DialBackoff();
  }

  /** True while a session with the peer is up. */
  get connected(): boolean {
    return this.#sessions.size > 0;
  }

  /** The live session, if any (the newest while one is being replaced). */
  get session(): PeerSession | undefined {
    return [...this.#sessions].pop();
  }

  /** True once stopped (by {@linkcode stop}, or because the address is this relay). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Dials the first time (later calls do nothing). */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    void this.#attempt(false);
  }

  /** Stops dialing and renewing; the live session runs until it ends (a draining relay). */
  finish(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#clear();
  }

  /** Stops dialing and closes the session. */
  stop(): void {
    this.finish();
    for (const s of this.#sessions) s.moq.close(0, "relay stopping");
  }

  #clear(): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    if (this.#renewal !== undefined) this.#timers.clearTimeout(this.#renewal);
    this.#timer = undefined;
    this.#renewal = undefined;
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = this.#timers.setTimeout(() => {
      this.#timer = undefined;
      void this.#attempt(true);
    }, ms);
  }

  async #attempt(retry: boolean): Promise<void> {
    if (this.#stopped || this.#dialing) return;
    this.#dialing = true;
    const m = this.#opts.metrics;
    const peer = this.label;
    if (retry) m.dialRetriesTotal.inc({ peer });
    let session: PeerSession;
    try {
      session = await this.#opts.dial();
    } catch (e) {
      this.#dialing = false;
      if (this.#stopped) return; // stopped while dialing (its address is gone): nothing to retry
      m.peerDialAttemptsTotal.inc({ peer, result: "error" });
      if (e instanceof SelfDialError) {
        this.#opts.log(`relay: peer ${peer} is this relay; not dialing it again`);
        this.stop();
        return;
      }
      // With a session still up (a renewal failed) the next try waits like any retry.
      const wait = this.#backoff.failed();
      this.#opts.log(
        `relay: peer ${peer}: dial failed (${errorText(e)}); retrying in ${
          (wait / 1000).toFixed(1)
        } s`,
      );
      this.#schedule(wait);
      return;
    }
    this.#dialing = false;
    m.peerDialAttemptsTotal.inc({ peer, result: "ok" });
    this.#backoff.succeeded();
    if (this.#stopped) {
      session.moq.close(0, "relay stopping");
      return;
    }
    this.#adopt(session);
  }

  #adopt(session: PeerSession): void {
    const previous = [...this.#sessions];
    this.#sessions.add(session);
    // The new session's announcements are candidates now; leaving the old one
    // promotes them (a renewal never interrupts a subscription).
    for (const old of previous) old.moq.close(0, "session renewed");
    this.#opts.log(`relay: peer ${this.label}: connected`);
    this.#armRenewal(session);
    session.ended.then((info) => {
      this.#sessions.delete(session);
      if (this.#stopped || this.#sessions.size > 0) return;
      if (this.#renewal !== undefined) this.#timers.clearTimeout(this.#renewal);
      this.#renewal = undefined;
      const wait = this.#backoff.ended();
      this.#opts.log(
        `relay: peer ${this.label}: session ended (${
          info.dropped ? "connection lost" : `code ${info.code}`
        }${info.reason ? `: ${info.reason}` : ""}); redialing`,
      );
      this.#schedule(wait);
    });
  }

  #armRenewal(session: PeerSession): void {
    if (this.#renewal !== undefined) this.#timers.clearTimeout(this.#renewal);
    this.#renewal = undefined;
    if (session.expiresAt === undefined) return;
    const at = session.expiresAt - (this.#opts.renewBeforeMs ?? 60_000);
    this.#renewal = this.#timers.setTimeout(() => {
      this.#renewal = undefined;
      void this.#attempt(false);
    }, Math.max(0, at - this.#now()));
  }
}
