import { trackKey, type TrackPath } from "../../path/mod.ts";
import type { RateLimit } from "../../config/mod.ts";
import { RateLimiter } from "../limits.ts";
import type { TrackLookup } from "./publisher.ts";

/** Tracks remembered as missing at most by default; past it the one remembered first is forgotten. */
export const MAX_MISSING_TRACKS = 4096;

/**
 * How long "no such track" is believed by default, ms. A track created here,
 * or learned from another funnel through the commit feed, is forgotten as
 * missing at once; this bounds a creation the feed did not tell (a shared
 * ledger's notice missed until its resync).
 */
export const MISSING_TRACK_MS = 10_000;

/**
 * Lookups of distinct tracks in flight at once at most by default: past it,
 * a subscription to a track that is not open is answered not found (and
 * nothing is remembered), so a flood of made-up names holds at most this
 * many storage queries at once.
 */
export const MAX_PENDING_LOOKUPS = 256;

/**
 * Storage lookups each MoQ session may cause by default: 64 at once, then 4
 * a second. An honest viewer subscribes to a handful of tracks, and a page
 * reload is a new session with a full budget; a dashboard naming a few dozen
 * tracks after a funnel restart (when every track is closed and costs a
 * lookup) fits in the burst. Only storage queries are charged: a track that
 * is open, remembered missing, or already being looked up costs nothing.
 */
export const SESSION_LOOKUP_LIMIT: RateLimit = { rate: 4, burst: 64 };

/**
 * Storage lookups all the own listener's sessions together may cause by
 * default, so that many sessions (anyone's, when auth is off) cannot add up
 * to an unbounded rate: 128 a second, 1,024 at once. With the relay
 * session's rate it adds up to fewer names a lookup remembers missing within
 * {@linkcode MISSING_TRACK_MS} than {@linkcode MAX_MISSING_TRACKS}, so a
 * flood of made-up names lapses its own entries, not evicts honest ones.
 */
export const LISTENER_LOOKUP_LIMIT: RateLimit = { rate: 128, burst: 1024 };

/**
 * Storage lookups the relay session may cause by default: 256 a second,
 * 4,096 at once. The relay subscribes for all of its subscribers over one
 * session, and after a funnel restart every track is closed: it re-subscribes
 * to as many as the funnel keeps open (`MAX_LIVE_TRACKS`) at once, so it gets
 * a budget of its own, not a client's nor a share of the listener's.
 */
export const RELAY_LOOKUP_LIMIT: RateLimit = { rate: 256, burst: 4096 };

/** The asker that names the relay session (charged {@linkcode RELAY_LOOKUP_LIMIT}). */
export const RELAY_ASKER = "relay";

/** Options of {@linkcode TrackLookups}. */
export interface TrackLookupsOptions {
  /** Tracks remembered as missing at most (default {@linkcode MAX_MISSING_TRACKS}). */
  readonly maxMissing?: number;
  /** How long "missing" is believed, ms (default {@linkcode MISSING_TRACK_MS}). */
  readonly missingMs?: number;
  /** Lookups of distinct tracks in flight at most (default {@linkcode MAX_PENDING_LOOKUPS}). */
  readonly maxPending?: number;
  /** Storage lookups per listener session (default {@linkcode SESSION_LOOKUP_LIMIT}). */
  readonly sessionLimit?: RateLimit;
  /** Storage lookups of all listener sessions together (default {@linkcode LISTENER_LOOKUP_LIMIT}). */
  readonly listenerLimit?: RateLimit;
  /** Storage lookups of the relay session (default {@linkcode RELAY_LOOKUP_LIMIT}). */
  readonly relayLimit?: RateLimit;
  /** Clock, ms (default `Date.now`). */
  readonly now?: () => number;
  /**
   * Whether the track is known to exist without a storage call (the ledger
   * has it open): then it is looked up afresh, never answered from memory.
   */
  readonly known?: (path: TrackPath) => boolean;
}

/**
 * The lookups a subscription to a track that is not open makes (whether the
 * ledger holds it), so that an anonymous client looping SUBSCRIBEs costs no
 * storage query per request: concurrent lookups of one track share one, and
 * "no such track" is remembered for a while (bounded in number and time)
 * until the track is {@linkcode created}. A lookup that would query storage
 * is charged to its asker's budget: a listener session's (and all listener
 * sessions' together) or the relay session's ({@linkcode RELAY_ASKER}); past
 * it the lookup is answered "too_many" without a query, so one session naming
 * fresh tracks as fast as it can costs storage a bounded rate.
 */
export class TrackLookups {
  readonly #ask: TrackLookup;
  readonly #maxMissing: number;
  readonly #missingMs: number;
  readonly #maxPending: number;
  readonly #now: () => number;
  readonly #known: ((path: TrackPath) => boolean) | undefined;
  /** Tracks looked up and not found, with when that lapses: the one lapsing first first. */
  readonly #missing = new Map<string, number>();
  readonly #pending = new Map<string, ReturnType<TrackLookup>>();
  readonly #sessions: RateLimiter;
  readonly #listener: RateLimiter;
  readonly #relay: RateLimiter;
  #asked = 0;
  #refused = 0;
  readonly #limited = { session: 0, listener: 0, relay: 0 };

  /** Lookups through `ask` (the ledger's). */
  constructor(ask: TrackLookup, options: TrackLookupsOptions = {}) {
    this.#ask = ask;
    this.#maxMissing = Math.max(1, options.maxMissing ?? MAX_MISSING_TRACKS);
    this.#missingMs = Math.max(0, options.missingMs ?? MISSING_TRACK_MS);
    this.#maxPending = Math.max(1, options.maxPending ?? MAX_PENDING_LOOKUPS);
    this.#now = options.now ?? Date.now;
    this.#known = options.known;
    this.#sessions = new RateLimiter(options.sessionLimit ?? SESSION_LOOKUP_LIMIT, this.#now);
    this.#listener = new RateLimiter(options.listenerLimit ?? LISTENER_LOOKUP_LIMIT, this.#now);
    this.#relay = new RateLimiter(options.relayLimit ?? RELAY_LOOKUP_LIMIT, this.#now);
  }

  /** Lookups passed on to `ask`. */
  get asked(): number {
    return this.#asked;
  }

  /** Lookups answered not found without asking because {@linkcode MAX_PENDING_LOOKUPS} were in flight. */
  get refused(): number {
    return this.#refused;
  }

  /**
   * Lookups answered "too_many" without asking, by the budget that was spent:
   * one session's, all listener sessions', or the relay session's.
   */
  get limited(): { readonly session: number; readonly listener: number; readonly relay: number } {
    return { ...this.#limited };
  }

  /** Tracks remembered as missing now (lapsed ones not yet swept included). */
  get missing(): number {
    return this.#missing.size;
  }

  /** Lookups in flight now. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * Whether `path` is a track, and its newest entry (a {@linkcode TrackLookup});
   * a query of storage is charged to `asker` (a listener session's key or
   * {@linkcode RELAY_ASKER}; none: not charged, the embedder's own lookup).
   */
  readonly lookup: TrackLookup = (path, asker) => {
    if (this.#known?.(path)) return this.#passOn(path);
    const key = trackKey(path);
    const until = this.#missing.get(key);
    if (until !== undefined) {
      if (until > this.#now()) return Promise.resolve(undefined);
      this.#missing.delete(key);
    }
    const pending = this.#pending.get(key);
    if (pending) return pending;
    if (this.#pending.size >= this.#maxPending) {
      this.#refused++;
      return Promise.resolve(undefined);
    }
    if (asker !== undefined && !this.#charge(asker)) return Promise.resolve("too_many");
    const asking: ReturnType<TrackLookup> = this.#passOn(path).then((found) => {
      // A creation heard meanwhile took it out of `#pending`: its "missing" is stale.
      if (this.#pending.get(key) !== asking) return found;
      this.#pending.delete(key);
      if (!found && !this.#known?.(path)) this.#remember(key);
      return found;
    }, (error) => {
      if (this.#pending.get(key) === asking) this.#pending.delete(key);
      throw error;
    });
    this.#pending.set(key, asking);
    return asking;
  };

  /** Track `path` exists now (created, committed to, or learned from another funnel). */
  created(path: TrackPath): void {
    if (this.#missing.size === 0 && this.#pending.size === 0) return;
    const key = trackKey(path);
    this.#missing.delete(key);
    this.#pending.delete(key);
  }

  // Takes a token from the asker's budget (and, for a listener session, from all of theirs).
  #charge(asker: string): boolean {
    if (asker === RELAY_ASKER) {
      if (this.#relay.take(asker).ok) return true;
      this.#limited.relay++;
      return false;
    }
    if (!this.#sessions.peek(asker).ok) {
      this.#limited.session++;
      return false;
    }
    if (!this.#listener.take("").ok) {
      this.#limited.listener++;
      return false;
    }
    this.#sessions.take(asker);
    return true;
  }

  #passOn(path: TrackPath): ReturnType<TrackLookup> {
    this.#asked++;
    return this.#ask(path);
  }

  #remember(key: string): void {
    const now = this.#now();
    for (const [k, until] of this.#missing) {
      if (until > now) break;
      this.#missing.delete(k);
    }
    this.#missing.set(key, now + this.#missingMs);
    if (this.#missing.size > this.#maxMissing) {
      this.#missing.delete(this.#missing.keys().next().value!);
    }
  }
}
