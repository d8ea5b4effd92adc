/**
 * The feed: a track's records in commit order, from any point in its
 * history, with no gap and no duplicate across the history-to-live
 * handover, reconnects and skips.
 *
 * How: records leave strictly by ledger sequence, each once, past a cursor
 * (the {@linkcode Sequencer}). Live groups (MoQ sequence = ledger sequence
 * + 1) wait there until the next one is in. What the live link cannot
 * supply is read from the ledger: after every (re)subscription (the
 * catch-up), whenever a parked long-poll says a record was committed while
 * no link is up, and for a gap that stays open past a short reorder wait or
 * that the publisher declared dropped (a skip). Small gaps are fetched over
 * MoQ first.
 */
import { type Backoff, sleep, systemTimers, type Timers } from "../timers/mod.ts";
import { BackpressureQueue } from "../wire/mod.ts";
import { formatGroupId } from "../record/mod.ts";
import { followBackoff, pollBackoff, retryBackoff } from "./backoff.ts";
import { dialSession } from "./dial.ts";
import { type RefusedError, retryable, TokenError } from "./errors.ts";
import {
  fatalReason,
  FeedErrorEvent,
  type FeedErrorReason,
  FeedGapEvent,
  type FeedState,
  FeedStateEvent,
} from "./events.ts";
import { type FollowAnswer, streamUrlOf, waitForCommit } from "./follow.ts";
import { funnelRefuses, type HttpContext } from "./http.ts";
import { readLedgerOn } from "./ledger_read.ts";
import { Wake } from "./wake.ts";
import { LinkKeeper } from "./link_keeper.ts";
import type { FeedOptions } from "./feed_options.ts";
import type { FeedRecord, Positioned } from "./record.ts";
import { dropped, fetchGap, readGroup } from "./repair.ts";
import { type Gap, type LedgerPosition, Sequencer } from "./sequencer.ts";
import { sharedSessions } from "./session_pool.ts";
import { checkStart, type FeedStart, resolveStart } from "./start.ts";
import { type TokenKeeper, tokenKeeperFor } from "./token.ts";
import { parseMoqUrl, parseTrackUrl, type TrackAddress } from "./track_url.ts";

/** Records handed over but not yet taken by the consumer before the feed pauses. */
const OUT_HIGH_WATER = 64;
/** Failed ledger reads in a row after which the feed reports the funnel unreachable. */
const UNREACHABLE_AFTER = 5;

/** A running feed; see {@linkcode openFeed}. */
export class Feed extends EventTarget implements AsyncIterable<FeedRecord> {
  /** Resolves once the feed has stopped (closed, aborted, or refused). */
  readonly closed: Promise<void>;
  readonly #address: TrackAddress;
  readonly #tokens: TokenKeeper;
  readonly #http: HttpContext;
  readonly #abort = new AbortController();
  readonly #out: BackpressureQueue<FeedRecord>;
  readonly #seq: Sequencer;
  readonly #timers: Timers;
  readonly #now: () => number;
  #state: FeedState = "connecting";
  #error: unknown = undefined;
  readonly #links: LinkKeeper;
  #catchUp = true;
  /** Pokes the pump: a group, a link change, the close. */
  readonly #wake: Wake;
  #detach: () => void = () => {};
  /** Problems reported and not yet recovered from (each is reported once). */
  readonly #reported = new Set<FeedErrorReason>();
  /** Ends the watch of the token keeper. */
  #unwatch: () => void = () => {};
  /** The timer that ends the feed when a failing token function's token runs out. */
  #giveUp: unknown = undefined;
  /** True while a MoQ "not found" is being checked over HTTP. */
  #confirming = false;

  /** @internal Use {@linkcode openFeed}. */
  constructor(options: FeedOptions) {
    super();
    this.#address = parseTrackUrl(options.track);
    const url = parseMoqUrl(options.moq);
    const from = checkStart(options.from ?? "latest");
    this.#timers = options.timers ?? systemTimers;
    this.#now = options.now ?? Date.now;
    this.#wake = new Wake(this.#timers);
    this.#tokens = tokenKeeperFor(options.token, this.#now);
    this.#seq = new Sequencer(options.reorderWaitMs ?? 500, this.#now);
    this.#http = {
      tokens: this.#tokens,
      signal: this.#abort.signal,
      timers: this.#timers,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    };
    this.#out = new BackpressureQueue<FeedRecord>(OUT_HIGH_WATER, () => this.close());
    this.#links = new LinkKeeper({
      url,
      tokens: this.#tokens,
      dial: options.dial ?? dialSession,
      pool: options.sessions ?? sharedSessions,
      timers: this.#timers,
      now: this.#now,
      ...(options.serverCertificateHashes
        ? { serverCertificateHashes: options.serverCertificateHashes }
        : {}),
      ...(options.caCerts ? { caCerts: options.caCerts } : {}),
      broadcast: this.#address.broadcast,
      name: this.#address.name,
      start: () => this.#seq.cursor + 2,
      onGroup: (group, link) => {
        this.#seq.offer(group.sequence - 1, () => readGroup(this.#seq.epoch, group, link.info));
        this.#wake.poke();
      },
      onReady: () => {
        this.#recovered("not_found");
        this.#catchUp = true;
        this.#wake.poke();
      },
      onLost: (refused) => {
        if (refused?.reason === "not_found") this.#confirm(refused);
        this.#wake.poke();
      },
      signal: this.#abort.signal,
    });
    const signal = options.signal;
    if (signal) {
      const onAbort = () => this.close();
      signal.addEventListener("abort", onAbort, { once: true });
      this.#detach = () => signal.removeEventListener("abort", onAbort);
    }
    this.#unwatch = this.#tokens.watch((failure) => this.#tokenTold(failure));
    this.closed = this.#run(from);
    if (signal?.aborted) this.close();
  }

  /** What the feed is doing now. */
  get state(): FeedState {
    return this.#state;
  }

  /** Why the feed closed, when a failure closed it (the error its iteration throws). */
  get error(): unknown {
    return this.#error;
  }

  /** The transport of the live subscription ("quic", "webtransport", "websocket"), while one is up. */
  get transport(): string | undefined {
    return this.#links.ready ? this.#links.current?.transport : undefined;
  }

  /**
   * The group of the last record handed over: save it, and resume later
   * with `from: { after: position }` to get every record after it once.
   */
  get position(): string | undefined {
    const s = this.#seq;
    return s.cursor < 0 ? undefined : formatGroupId({ epoch: s.epoch, seq: s.cursor });
  }

  /** Ends the feed: iteration finishes after the records already handed over. Idempotent. */
  close(): void {
    if (this.#abort.signal.aborted) return;
    this.#abort.abort();
    this.#detach();
    this.#unwatch();
    if (this.#giveUp !== undefined) this.#timers.clearTimeout(this.#giveUp);
    this.#links.current?.close();
    this.#out.end(this.#error);
    this.#wake.poke();
    this.#setState("closed");
  }

  /** Records in commit order; breaking out of the loop closes the feed. */
  [Symbol.asyncIterator](): AsyncIterator<FeedRecord> {
    return this.#out[Symbol.asyncIterator]();
  }

  get #closing(): boolean {
    return this.#abort.signal.aborted;
  }

  get #live(): boolean {
    return this.#links.ready;
  }

  #setState(state: FeedState): void {
    if (this.#state === state || this.#state === "closed") return;
    this.#state = state;
    this.dispatchEvent(new FeedStateEvent(state));
  }

  /** Reports a problem once per episode; a fatal one closes the feed. */
  #report(reason: FeedErrorReason, error: unknown, fatal = false): void {
    if (this.#state === "closed" || (!fatal && this.#reported.has(reason))) return;
    this.#reported.add(reason);
    this.dispatchEvent(new FeedErrorEvent(reason, error, fatal));
  }

  #recovered(reason: FeedErrorReason): void {
    this.#reported.delete(reason);
  }

  /** Closes the feed with `err`, which its iteration then throws. */
  #fail(err: unknown): void {
    if (this.#closing) return;
    this.#error = err;
    this.#report(fatalReason(err), err, true);
    this.close();
  }

  /**
   * The token function failed (shown at once, though the held token still
   * works) or recovered. While it fails, the feed ends when the held token
   * is past the servers' leeway, whoever is asking for it then.
   */
  #tokenTold(failure: TokenError | undefined): void {
    if (this.#giveUp !== undefined) this.#timers.clearTimeout(this.#giveUp);
    this.#giveUp = undefined;
    if (!failure) return this.#recovered("token");
    if (failure.final) return this.#fail(failure);
    this.#report("token", failure);
    const at = this.#tokens.givesUpAt;
    if (!Number.isFinite(at)) return;
    this.#giveUp = this.#timers.setTimeout(() => {
      this.#giveUp = undefined;
      this.#tokens.refresh().catch((err) => {
        if (err instanceof TokenError && err.final) this.#fail(err);
      });
    }, Math.max(0, at - this.#now()));
  }

  /**
   * The MoQ server said "not found", which over a transport that cannot
   * carry a refusal's code may be a refusal: the funnel is asked with the
   * same credential, and a 401 or 403 there ends the feed as refused.
   */
  async #confirm(refused: RefusedError): Promise<void> {
    if (this.#confirming || this.#reported.has("not_found")) return;
    this.#confirming = true;
    const refusal = await funnelRefuses(this.#http, this.#address.url).finally(() => {
      this.#confirming = false;
    });
    if (refusal) return this.#fail(refusal);
    if (!this.#links.ready) this.#report("not_found", refused);
  }

  async #run(from: FeedStart): Promise<void> {
    try {
      await this.#retrying(async () => {
        const start = await resolveStart(this.#http, this.#address.url, from);
        this.#seq.epoch = start.epoch;
        this.#seq.cursor = start.seq;
      });
      if (this.#closing) return;
      await Promise.all([this.#links.run(), this.#pump()]);
    } catch (err) {
      this.#fail(err);
    }
  }

  /** Runs `step` until it succeeds, waiting between retryable failures; rethrows the others. */
  async #retrying(step: () => Promise<void>): Promise<void> {
    const backoff = retryBackoff();
    while (!this.#closing) {
      try {
        return await step();
      } catch (err) {
        if (this.#closing) return;
        this.#failed(err, backoff.failures + 1);
        await sleep(backoff.next(), this.#abort.signal, this.#timers);
      }
    }
  }

  /** A ledger read failed: rethrows what is final, reports what keeps failing. */
  #failed(err: unknown, failures: number): void {
    if (!retryable(err)) throw err;
    if (err instanceof TokenError) this.#report("token", err);
    else if (failures >= UNREACHABLE_AFTER) this.#report("unreachable", err);
  }

  // Hands records over in order and decides when to read the ledger.
  async #pump(): Promise<void> {
    const backoff = retryBackoff();
    // While no subscription is up, one long-poll at a time says when to read the
    // ledger (parked again after a failure: 1 s doubling up to 10 s); where none is
    // offered the ledger is polled, 1 s doubling up to 5 s. All with full jitter.
    const polls = pollBackoff();
    const follows = followBackoff();
    const stream = streamUrlOf(this.#address.url);
    let follow = true;
    let pollAt = Infinity;
    while (!this.#closing) {
      for (let p = this.#seq.takeNext(); p; p = this.#seq.takeNext()) await this.#emit(p);
      if (this.#closing) return;
      const link = this.#links.current;
      const gap = this.#seq.gap((s) => dropped(link, s + 1));
      if (this.#live) polls.reset();
      const pollDue = !this.#live && this.#now() >= pollAt;
      if (this.#catchUp || gap?.due || pollDue) {
        const catchUp = this.#catchUp;
        this.#catchUp = false;
        this.#setState(this.#live ? "repairing" : "connecting");
        try {
          // A gap filled over MoQ is not the catch-up: that one reads the ledger.
          const readLedger = await this.#repair(gap?.due ? gap : undefined);
          if (catchUp && !readLedger) this.#catchUp = true;
          backoff.reset();
          this.#recovered("unreachable");
        } catch (err) {
          if (this.#closing) return;
          this.#failed(err, backoff.failures + 1);
          if (catchUp) this.#catchUp = true;
          await sleep(backoff.next(), this.#abort.signal, this.#timers);
        }
        pollAt = follow ? Infinity : this.#now() + polls.next();
        continue;
      }
      this.#setState(this.#live ? "live" : "connecting");
      if (!this.#live && follow) {
        const answer = await this.#follow(stream, follows, gap?.dueAt ?? Infinity);
        if (answer === "committed") pollAt = -Infinity;
        if (answer === "unavailable") {
          follow = false;
          pollAt = this.#now() + polls.next();
        }
        continue;
      }
      const until = Math.min(gap?.dueAt ?? Infinity, this.#live ? Infinity : pollAt);
      await this.#wake.wait(until - this.#now());
      // Where the long-poll was unavailable, it is tried again after each timed read.
      if (!this.#live && this.#now() >= pollAt) follow = true;
    }
  }

  /**
   * Parks one long-poll until a record is committed, the link comes up, a
   * gap is due at `dueAt`, or the feed closes ("quiet" for all but the
   * first). Dial attempts that fail meanwhile leave it parked. A failure is
   * reported as a read's would be, then waited out.
   */
  async #follow(stream: URL, follows: Backoff, dueAt: number): Promise<FollowAnswer> {
    const stop = new AbortController();
    const watch = (async () => {
      while (!stop.signal.aborted) {
        await this.#wake.wait(dueAt - this.#now());
        if (this.#live || this.#closing || this.#now() >= dueAt) stop.abort();
      }
    })();
    const signal = AbortSignal.any([this.#abort.signal, stop.signal]);
    try {
      const answer = await waitForCommit(
        { ...this.#http, signal },
        stream,
        this.#seq.epoch,
        this.#seq.cursor,
      );
      follows.reset();
      this.#recovered("unreachable");
      return answer;
    } catch (err) {
      if (this.#closing || stop.signal.aborted) return "quiet";
      this.#failed(err, follows.failures + 1);
      await sleep(follows.next(), signal, this.#timers).catch(() => {});
      return "quiet";
    } finally {
      stop.abort();
      this.#wake.poke();
      await watch;
    }
  }

  async #emit(p: Positioned): Promise<void> {
    await this.#out.push(p.record);
  }

  /**
   * Reads what is missing: a gap over MoQ FETCH when the link can supply it
   * (a relay forwards what it does not hold), else the ledger after the
   * cursor. True when it read the ledger up to its newest record.
   */
  async #repair(gap: Gap | undefined): Promise<boolean> {
    const link = this.#links.current;
    const seq = this.#seq;
    if (
      gap && link?.ready &&
      await fetchGap(link, this.#address, seq, gap, () => this.#closing)
    ) {
      return false;
    }
    return await readLedgerOn(this.#http, this.#address.url, seq, {
      emit: (p) => this.#emit(p),
      skipped: (from, to) => this.#skipped(from, to),
      closing: () => this.#closing,
    });
  }

  /** Records the ledger no longer holds: said, never skipped silently. */
  #skipped(from: LedgerPosition, to: LedgerPosition): void {
    if (to.seq < 0 && from.epoch !== to.epoch) to = { epoch: from.epoch, seq: from.seq };
    this.dispatchEvent(new FeedGapEvent(formatGroupId(from), formatGroupId(to)));
  }
}
