/**
 * The feed: a track's records in commit order, from any point in its
 * history, with no gap and no duplicate across the history-to-live
 * handover, reconnects and skips.
 *
 * How: records leave strictly by ledger sequence, each once, past a cursor
 * (the {@linkcode Sequencer}). Live groups (MoQ sequence = ledger sequence
 * + 1) wait there until the next one is in. What the live link cannot
 * supply is read from the ledger: after every (re)subscription (the
 * catch-up), every second while no link is up, and for a gap that stays
 * open past a short reorder wait or that the publisher declared dropped (a
 * skip). Small gaps are fetched over MoQ first.
 */
import type { ReceivedGroup, TrackInfo } from "../moq/mod.ts";
import { sleep, systemTimers, type Timers } from "../timers/mod.ts";
import { BackpressureQueue } from "../wire/mod.ts";
import { formatGroupId } from "../record/mod.ts";
import { retryBackoff } from "./backoff.ts";
import { type CertificateHash, type Dialer, dialSession, MOQ_SCHEMES } from "./dial.ts";
import { HttpError, retryable } from "./errors.ts";
import { type HttpContext, MAX_PAGE, readAfter } from "./http.ts";
import { LinkKeeper } from "./link_keeper.ts";
import type { LiveLink } from "./live.ts";
import { type FeedRecord, type Positioned, recordFromFrame } from "./record.ts";
import { type Gap, Sequencer } from "./sequencer.ts";
import { checkStart, type FeedStart, resolveStart } from "./start.ts";
import { TokenKeeper, type TokenSource } from "./token.ts";
import { parseTrackUrl, type TrackAddress } from "./track_url.ts";

/**
 * What a feed is doing: `connecting` (no live subscription yet, or not any
 * more; records may still come from the ledger), `repairing` (subscribed,
 * reading what the subscription missed from the ledger), `live` (subscribed
 * and complete up to the newest record seen), `closed`.
 */
export type FeedState = "connecting" | "live" | "repairing" | "closed";

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
}

/** The `statechange` event a feed dispatches. */
export class FeedStateEvent extends Event {
  /** The new state. */
  readonly state: FeedState;
  /** Makes the event. */
  constructor(state: FeedState) {
    super("statechange");
    this.state = state;
  }
}

/** How often the ledger is read while no live subscription is up, ms. */
const POLL_MS = 1_000;
/** Gaps at most this long are fetched over MoQ before the ledger is asked over HTTP. */
const FETCH_GAP_MAX = 256;
/** FETCH requests in flight at once while filling a gap. */
const FETCH_CONCURRENCY = 16;
/** Records handed over but not yet taken by the consumer before the feed pauses. */
const OUT_HIGH_WATER = 64;

/**
 * Opens a feed of a track's records. Iterate it with `for await`; it
 * reconnects by itself and ends only when closed, or on a refusal (such as
 * 401 or 403), which the iteration then throws.
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
  #state: FeedState = "connecting";
  #error: unknown = undefined;
  readonly #links: LinkKeeper;
  #catchUp = true;
  #wake: (() => void) | undefined;
  #detach: () => void = () => {};

  /** @internal Use {@linkcode openFeed}. */
  constructor(options: FeedOptions) {
    super();
    this.#address = parseTrackUrl(options.track);
    const from = checkStart(options.from ?? "latest");
    this.#tokens = new TokenKeeper(options.token);
    this.#timers = options.timers ?? systemTimers;
    this.#seq = new Sequencer(options.reorderWaitMs ?? 500);
    this.#http = {
      tokens: this.#tokens,
      signal: this.#abort.signal,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    };
    this.#out = new BackpressureQueue<FeedRecord>(OUT_HIGH_WATER, () => this.close());
    this.#links = new LinkKeeper({
      url: moqUrl(options.moq),
      tokens: this.#tokens,
      dial: options.dial ?? dialSession,
      timers: this.#timers,
      ...(options.serverCertificateHashes
        ? { serverCertificateHashes: options.serverCertificateHashes }
        : {}),
      ...(options.caCerts ? { caCerts: options.caCerts } : {}),
      broadcast: this.#address.broadcast,
      name: this.#address.name,
      start: () => this.#seq.cursor + 2,
      onGroup: (group, link) => {
        this.#seq.offer(group.sequence - 1, () => this.#read(group, link.info));
        this.#poke();
      },
      onReady: () => {
        this.#catchUp = true;
        this.#poke();
      },
      onLost: () => this.#poke(),
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

  /** Why the feed closed, when a refusal closed it. */
  get error(): unknown {
    return this.#error;
  }

  /** The transport of the live subscription ("quic", "webtransport", "websocket"), while one is up. */
  get transport(): string | undefined {
    return this.#links.ready ? this.#links.current?.transport : undefined;
  }

  /** The group of the last record handed over (to resume later with `{ after }`). */
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
        if (!retryable(err)) throw err;
        await sleep(backoff.next(), this.#abort.signal, this.#timers);
      }
    }
  }

  // Hands records over in order and decides when to read the ledger.
  async #pump(): Promise<void> {
    const backoff = retryBackoff();
    let lastRead = 0;
    while (!this.#closing) {
      for (let p = this.#seq.takeNext(); p; p = this.#seq.takeNext()) await this.#emit(p);
      if (this.#closing) return;
      const link = this.#links.current;
      const gap = this.#seq.gap((s) => dropped(link, s + 1));
      const pollDue = !this.#live && Date.now() - lastRead >= POLL_MS;
      if (this.#catchUp || gap?.due || pollDue) {
        const catchUp = this.#catchUp;
        this.#catchUp = false;
        this.#setState(this.#live ? "repairing" : "connecting");
        try {
          // A gap filled over MoQ is not the catch-up: that one reads the ledger.
          const readLedger = await this.#repair(gap?.due ? gap : undefined);
          if (catchUp && !readLedger) this.#catchUp = true;
          backoff.reset();
        } catch (err) {
          if (this.#closing) return;
          if (!retryable(err)) throw err;
          if (catchUp) this.#catchUp = true;
          await sleep(backoff.next(), this.#abort.signal, this.#timers);
        }
        lastRead = Date.now();
        continue;
      }
      this.#setState(this.#live ? "live" : "connecting");
      const until = Math.min(gap?.dueAt ?? Infinity, this.#live ? Infinity : lastRead + POLL_MS);
      await this.#waitChange(until - Date.now());
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
    if (
      gap && link?.ready && gap.to - gap.from < FETCH_GAP_MAX && await this.#fetchGap(link, gap)
    ) {
      return false;
    }
    const seq = this.#seq;
    for (;;) {
      let read;
      try {
        read = await readAfter(this.#http, this.#address.url, seq.epoch, seq.cursor, MAX_PAGE);
      } catch (err) {
        if (err instanceof HttpError && err.status === 404) return true; // no such track yet
        throw err;
      }
      for (const p of read.page.records) if (seq.accept(p)) await this.#emit(p);
      for (let p = seq.takeNext(); p; p = seq.takeNext()) await this.#emit(p);
      if (!read.more || this.#closing) return true;
    }
  }

  /** Fetches the missing groups over MoQ, a window at a time; false once one could not be had. */
  async #fetchGap(link: LiveLink, gap: Gap): Promise<boolean> {
    const { broadcast, name } = this.#address;
    for (let from = gap.from; from <= gap.to; from += FETCH_CONCURRENCY) {
      const wanted: number[] = [];
      for (let s = from; s <= Math.min(gap.to, from + FETCH_CONCURRENCY - 1); s++) wanted.push(s);
      const got = await Promise.all(wanted.map(async (s) => {
        try {
          const group = await link.fetch(broadcast, name, s + 1);
          return this.#seq.offer(s, () => this.#read(group, link.info)) || s <= this.#seq.cursor;
        } catch {
          // A group FETCH cannot supply is read from the ledger over HTTP instead.
          return false;
        }
      }));
      if (!got.every(Boolean) || this.#closing) return false;
    }
    return true;
  }

  /** A live or fetched group as a record; undefined when its frame cannot be read. */
  #read(group: ReceivedGroup, info: TrackInfo | undefined): Positioned | undefined {
    const frame = group.frames[0];
    if (!frame) return undefined;
    try {
      return recordFromFrame(
        this.#seq.epoch,
        group.sequence - 1,
        frame,
        liveWallclock(group, info),
      );
    } catch {
      return undefined; // the ledger supplies it instead
    }
  }
}

/** True when the link's publisher declared MoQ group `sequence` dropped. */
function dropped(link: LiveLink | undefined, sequence: number): boolean {
  return link?.drops.some(([a, b]) => sequence >= a && sequence <= b) ?? false;
}

/** The commit time a live frame carries: exact when the track's timescale is nanoseconds. */
function liveWallclock(group: ReceivedGroup, info: TrackInfo | undefined): bigint | undefined {
  return info?.timescale === 1_000_000_000 ? group.exactTimestamp : undefined;
}

function moqUrl(moq: string | URL): URL {
  let url: URL;
  try {
    url = new URL(moq);
  } catch {
    throw new TypeError(`Cannot use MoQ URL "${moq}": not an absolute URL`);
  }
  if (!MOQ_SCHEMES.includes(url.protocol)) {
    throw new TypeError(
      `Cannot use MoQ URL "${url.href}": the scheme must be https, wss, ws (loopback) or moqt`,
    );
  }
  return url;
}
