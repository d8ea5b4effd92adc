/**
 * The feed: a track's records in commit order, from any point in its
 * history, with no gap and no duplicate across the history-to-live
 * handover, reconnects and skips.
 *
 * How: records leave strictly by ledger sequence, each once, past a cursor
 * (the {@linkcode Sequencer}). Live groups (MoQ sequence = ledger sequence
 * + 1) wait there until the next one is in. What the live link cannot
 * supply is read from the ledger: after every (re)subscription (the
 * catch-up), polled with backoff while no link is up, and for a gap that stays
 * open past a short reorder wait or that the publisher declared dropped (a
 * skip). Small gaps are fetched over MoQ first.
 */
import { sleep, systemTimers, type Timers } from "../timers/mod.ts";
import { BackpressureQueue } from "../wire/mod.ts";
import { formatGroupId } from "../record/mod.ts";
import { pollBackoff, retryBackoff } from "./backoff.ts";
import { type CertificateHash, type Dialer, dialSession } from "./dial.ts";
import { HttpError, retryable, TokenError } from "./errors.ts";
import {
  fatalReason,
  FeedErrorEvent,
  type FeedErrorReason,
  FeedGapEvent,
  type FeedState,
  FeedStateEvent,
} from "./events.ts";
import { type HttpContext, MAX_PAGE, readAfter } from "./http.ts";
import { LinkKeeper } from "./link_keeper.ts";
import type { FeedRecord, Positioned } from "./record.ts";
import { dropped, fetchGap, readGroup } from "./repair.ts";
import { type Gap, type LedgerPosition, Sequencer } from "./sequencer.ts";
import { type SessionPool, sharedSessions } from "./session_pool.ts";
import { checkStart, type FeedStart, resolveStart } from "./start.ts";
import { type TokenKeeper, tokenKeeperFor, type TokenSource } from "./token.ts";
import { parseMoqUrl, parseTrackUrl, type TrackAddress } from "./track_url.ts";

/** Options of {@linkcode openFeed}. */
export interface FeedOptions {
  /** The track's HTTP URL on the funnel: `http(s)://host/tracks/<broadcast path>/<track>`. */
  readonly track: string | URL;
  /**
   * Where to subscribe: a relay or the funnel's own listener. `https://` is
   * WebTransport (the browser's own, or sluice's client in Deno), falling
   * back to QMux over WebSocket on the same host and port; `wss://` is that
   * WebSocket directly; `moqt://` is native QUIC (Deno only).
   */
  readonly moq: string | URL;
  /** Where to start (default "latest"). */
  readonly from?: FeedStart;
  /**
   * Credential for HTTP (bearer) and MoQ (the URL's `jwt`): a token, or a
   * function returning a fresh one, which is called again before the
   * current one expires (the MoQ session is then replaced without a gap).
   * Feeds given the same function share its tokens and their MoQ session.
   */
  readonly token?: TokenSource;
  /** Development certificates to accept by SHA-256 (self-signed, at most 14 days). */
  readonly serverCertificateHashes?: readonly CertificateHash[];
  /**
   * Extra PEM root certificates to trust, for every transport (Deno only: a
   * browser trusts what it trusts; a WebSocket cannot pin a hash).
   */
  readonly caCerts?: readonly string[];
  /** Closes the feed when aborted. */
  readonly signal?: AbortSignal;
  /** The fetch to use for HTTP (default the global one). */
  readonly fetch?: typeof fetch;
  /** Opens the transport session (default: chosen by the URL's scheme and the runtime). */
  readonly dial?: Dialer;
  /** How long a missing record is waited for before it is read from the ledger, ms (default 500). */
  readonly reorderWaitMs?: number;
  /** The timers for waits, backoff, probes and renewals (default the global ones). */
  readonly timers?: Timers;
  /** The clock those timers run on, ms since the epoch (default `Date.now`). */
  readonly now?: () => number;
  /** The MoQ sessions to share (default one pool for the whole application). */
  readonly sessions?: SessionPool;
}

/** Gaps at most this long are fetched over MoQ before the ledger is asked over HTTP. */
const FETCH_GAP_MAX = 256;
/** Records handed over but not yet taken by the consumer before the feed pauses. */
const OUT_HIGH_WATER = 64;
/** Failed ledger reads in a row after which the feed reports the funnel unreachable. */
const UNREACHABLE_AFTER = 5;

/**
 * Opens a feed of a track's records. Iterate it with `for await`; it
 * reconnects by itself and ends only when closed, or on a failure the
 * application must act on (a refused credential, a token function that
 * keeps failing), which the iteration then throws and an `error` event
 * ({@linkcode FeedErrorEvent}) reports.
 *
 * @example
 * ```ts
 * import { openFeed } from "@sluice/sluice/client";
 *
 * const feed = openFeed({
 *   track: "http://localhost:8090/tracks/room/1/chat",
 *   moq: "https://localhost:4433/",
 *   from: { last: 50 },
 * });
 * feed.addEventListener("statechange", () => console.log("feed is", feed.state));
 * for await (const record of feed) {
 *   if (record.redacts) console.log("removed", record.redacts);
 *   else console.log(record.group, record.sender, record.payload);
 * }
 * ```
 */
export function openFeed(options: FeedOptions): Feed {
  return new Feed(options);
}

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
  #wake: (() => void) | undefined;
  #detach: () => void = () => {};
  /** Problems reported and not yet recovered from (each is reported once). */
  readonly #reported = new Set<FeedErrorReason>();

  /** @internal Use {@linkcode openFeed}. */
  constructor(options: FeedOptions) {
    super();
    this.#address = parseTrackUrl(options.track);
    const url = parseMoqUrl(options.moq);
    const from = checkStart(options.from ?? "latest");
    this.#timers = options.timers ?? systemTimers;
    this.#now = options.now ?? Date.now;
    this.#tokens = tokenKeeperFor(options.token, this.#now);
    this.#seq = new Sequencer(options.reorderWaitMs ?? 500, this.#now);
    this.#http = {
      tokens: this.#tokens,
      signal: this.#abort.signal,
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
        this.#poke();
      },
      onReady: () => {
        this.#recovered("not-found");
        this.#catchUp = true;
        this.#poke();
      },
      onLost: (refused) => {
        if (refused?.reason === "not-found") this.#report("not-found", refused);
        this.#poke();
      },
      signal: this.#abort.signal,
    });
    const signal = options.signal;
    if (signal) {
      const onAbort = () => this.close();
      signal.addEventListener("abort", onAbort, { once: true });
      this.#detach = () => signal.removeEventListener("abort", onAbort);
    }
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
    this.#links.current?.close();
    this.#out.end(this.#error);
    this.#poke();
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

  #poke(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Waits for a poke (a group, a link change, the close) or `ms`. */
  #waitChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: unknown;
      this.#wake = () => {
        if (timer !== undefined) this.#timers.clearTimeout(timer);
        resolve();
      };
      if (Number.isFinite(ms)) timer = this.#timers.setTimeout(() => this.#poke(), Math.max(0, ms));
    });
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
      if (!this.#closing) {
        this.#error = err;
        this.#report(fatalReason(err), err, true);
        this.close();
      }
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
    // While no subscription is up the ledger is polled, 1 s doubling up to 5 s, full jitter.
    const polls = pollBackoff();
    let pollAt = this.#now() + polls.next();
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
          this.#recovered("token");
        } catch (err) {
          if (this.#closing) return;
          this.#failed(err, backoff.failures + 1);
          if (catchUp) this.#catchUp = true;
          await sleep(backoff.next(), this.#abort.signal, this.#timers);
        }
        pollAt = this.#now() + polls.next();
        continue;
      }
      this.#setState(this.#live ? "live" : "connecting");
      const until = Math.min(gap?.dueAt ?? Infinity, this.#live ? Infinity : pollAt);
      await this.#waitChange(until - this.#now());
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
      gap && link?.ready && gap.to - gap.from < FETCH_GAP_MAX &&
      await fetchGap(link, this.#address, seq, gap, () => this.#closing)
    ) {
      return false;
    }
    for (;;) {
      let read;
      try {
        read = await readAfter(this.#http, this.#address.url, seq.epoch, seq.cursor, MAX_PAGE);
      } catch (err) {
        if (err instanceof HttpError && err.status === 404) return true; // no such track yet
        throw err;
      }
      for (const p of read.page.records) {
        if (!seq.accept(p)) continue;
        if (seq.skipped) this.#skipped(seq.skipped.from, seq.skipped.to);
        await this.#emit(p);
      }
      for (let p = seq.takeNext(); p; p = seq.takeNext()) await this.#emit(p);
      if (!read.more || this.#closing) return true;
    }
  }

  /** Records the ledger no longer holds: said, never skipped silently. */
  #skipped(from: LedgerPosition, to: LedgerPosition): void {
    if (to.seq < 0 && from.epoch !== to.epoch) to = { epoch: from.epoch, seq: from.seq };
    this.dispatchEvent(new FeedGapEvent(formatGroupId(from), formatGroupId(to)));
  }
}
