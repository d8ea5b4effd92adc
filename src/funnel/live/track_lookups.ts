import { trackKey, type TrackPath } from "../../path/mod.ts";
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

/** Options of {@linkcode TrackLookups}. */
export interface TrackLookupsOptions {
  /** Tracks remembered as missing at most (default {@linkcode MAX_MISSING_TRACKS}). */
  readonly maxMissing?: number;
  /** How long "missing" is believed, ms (default {@linkcode MISSING_TRACK_MS}). */
  readonly missingMs?: number;
  /** Lookups of distinct tracks in flight at most (default {@linkcode MAX_PENDING_LOOKUPS}). */
  readonly maxPending?: number;
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
 * until the track is {@linkcode created}.
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
  #asked = 0;
  #refused = 0;

  /** Lookups through `ask` (the ledger's). */
  constructor(ask: TrackLookup, options: TrackLookupsOptions = {}) {
    this.#ask = ask;
    this.#maxMissing = Math.max(1, options.maxMissing ?? MAX_MISSING_TRACKS);
    this.#missingMs = Math.max(0, options.missingMs ?? MISSING_TRACK_MS);
    this.#maxPending = Math.max(1, options.maxPending ?? MAX_PENDING_LOOKUPS);
    this.#now = options.now ?? Date.now;
    this.#known = options.known;
  }

  /** Lookups passed on to `ask`. */
  get asked(): number {
    return this.#asked;
  }

  /** Lookups answered not found without asking because {@linkcode MAX_PENDING_LOOKUPS} were in flight. */
  get refused(): number {
    return this.#refused;
  }

  /** Tracks remembered as missing now (lapsed ones not yet swept included). */
  get missing(): number {
    return this.#missing.size;
  }

  /** Lookups in flight now. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Whether `path` is a track, and its newest entry (a {@linkcode TrackLookup}). */
  readonly lookup: TrackLookup = (path) => {
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
