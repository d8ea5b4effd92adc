/** Credentials for HTTP and MoQ: a fixed token, or a function that returns a fresh one. */
import type { Backoff } from "../timers/mod.ts";
import { tokenBackoff } from "./backoff.ts";
import { TokenError } from "./errors.ts";

/** A bearer token, or a function returning a fresh one (called again before the current expires). */
export type TokenSource = string | (() => string | Promise<string>);

/** Longest head start a refresh takes before expiry, ms. */
const MAX_MARGIN_MS = 60_000;
/** Failed calls in a row, with no token ever had, after which the failure is final. */
export const TOKEN_ATTEMPTS = 6;
/**
 * How long past its `exp` a held token may still be used, ms: the servers'
 * clock leeway (src/auth's CLOCK_LEEWAY_SECONDS). Once a token function has
 * kept failing that long, no server takes the token any more and the
 * failure is final.
 */
export const TOKEN_LEEWAY_MS = 60_000;

/** Told of each call of a token function: the failure, or undefined once one succeeded. */
export type TokenListener = (failure: TokenError | undefined) => void;

/** The claims of a compact JWT, decoded without verifying; undefined when it is not one. */
export function jwtClaims(token: string): unknown {
  const part = token.split(".")[1];
  if (part === undefined) return undefined;
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4))) as unknown;
  } catch {
    return undefined; // not a JWT
  }
}

/** When a compact JWT's `exp` and `iat` say it expires, ms since the epoch; undefined if unknown. */
export function tokenLifetime(token: string): { issuedAt?: number; expiresAt: number } | undefined {
  const claims = jwtClaims(token) as { exp?: unknown; iat?: unknown } | null | undefined;
  if (typeof claims?.exp !== "number") return undefined;
  return {
    expiresAt: claims.exp * 1000,
    ...(typeof claims.iat === "number" ? { issuedAt: claims.iat * 1000 } : {}),
  };
}

interface Current {
  readonly token: string;
  readonly renewAt: number;
  readonly expiresAt: number;
}

/**
 * Holds the current token of a {@linkcode TokenSource}: a function is asked
 * again a quarter of the token's lifetime (at most a minute) before its
 * `exp`, or at once after the server refused it. A failing function is
 * asked again only after a backoff (1 s doubling up to 30 s, full jitter),
 * however many callers want a token meanwhile; they keep the current token
 * while it is valid, and a {@linkcode TokenError} once it expired. That is
 * final once the held token is more than {@linkcode TOKEN_LEEWAY_MS} past
 * its `exp` (no server takes it any more), or, without one, after
 * {@linkcode TOKEN_ATTEMPTS} failures in a row. Listeners ({@linkcode watch}) hear of each
 * failure as it happens, so it can be shown while the held token still works.
 */
export class TokenKeeper {
  readonly #source: TokenSource | undefined;
  readonly #now: () => number;
  readonly #backoff: Backoff;
  #current: Current | undefined;
  #pending: Promise<string> | undefined;
  #retryAt = -Infinity;
  #lastError: unknown;
  readonly #listeners = new Set<TokenListener>();

  /** Keeps `source`'s token; `now` is the clock in ms. */
  constructor(
    source: TokenSource | undefined,
    now: () => number = Date.now,
    random?: () => number,
  ) {
    this.#source = source;
    this.#now = now;
    this.#backoff = tokenBackoff(random);
  }

  /** True when the source can give a fresh token (a function). */
  get refreshable(): boolean {
    return typeof this.#source === "function";
  }

  /**
   * When the keeper wants to ask the source next, ms on its clock (Infinity
   * when never): the renewal time, or after a failure the end of its backoff.
   */
  get renewAt(): number {
    const renew = this.#current?.renewAt ?? Infinity;
    if (this.#backoff.failures === 0) return renew;
    return Math.min(Math.max(renew, this.#retryAt), this.givesUpAt);
  }

  /** The token held now, if any (a string source's own token). */
  get current(): string | undefined {
    return typeof this.#source === "string" ? this.#source : this.#current?.token;
  }

  /** Failed calls of the source in a row. */
  get failures(): number {
    return this.#backoff.failures;
  }

  /**
   * When the failure becomes final although fewer than
   * {@linkcode TOKEN_ATTEMPTS} calls failed: the held token's `exp` plus the
   * leeway, while the source is failing (Infinity otherwise).
   */
  get givesUpAt(): number {
    if (this.#backoff.failures === 0) return Infinity;
    return (this.#current?.expiresAt ?? Infinity) + TOKEN_LEEWAY_MS;
  }

  /** Calls `listener` after every call of the source (see {@linkcode TokenListener}); returns the unwatch. */
  watch(listener: TokenListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The token to use now, refreshed when it is due; undefined without a source. */
  async get(): Promise<string | undefined> {
    const source = this.#source;
    if (source === undefined) return undefined;
    if (typeof source === "string") return source;
    const current = this.#current;
    if (current && this.#now() < current.renewAt) return current.token;
    return await this.refresh();
  }

  /**
   * Asks the source for a new token (shared by concurrent callers), unless
   * a failure's backoff is still running: then the current token while it
   * is valid, else the last failure.
   */
  refresh(): Promise<string | undefined> {
    const source = this.#source;
    if (typeof source !== "function") return Promise.resolve(source);
    if (this.#now() < this.#retryAt) {
      try {
        return Promise.resolve(this.#fallback());
      } catch (err) {
        return Promise.reject(err); // a rejection, as from the call itself
      }
    }
    this.#pending ??= (async () => {
      try {
        const token = await source();
        if (typeof token !== "string" || token === "") {
          throw new TypeError("The token function returned no token");
        }
        this.#current = { token, ...this.#times(token) };
        const failed = this.#backoff.failures > 0;
        this.#backoff.reset();
        this.#retryAt = -Infinity;
        if (failed) this.#tell(undefined);
        return token;
      } catch (err) {
        this.#lastError = err;
        this.#retryAt = this.#now() + this.#backoff.next();
        const current = this.#current;
        const valid = current !== undefined && this.#now() < current.expiresAt;
        const failures = this.#backoff.failures;
        this.#tell(new TokenError(failures, !valid && this.#final(), { cause: err }));
        return this.#fallback();
      } finally {
        this.#pending = undefined;
      }
    })();
    return this.#pending;
  }

  /** The current token while it is valid; else the failure, final after enough of them. */
  #fallback(): string {
    const current = this.#current;
    if (current && this.#now() < current.expiresAt) return current.token;
    throw new TokenError(this.#backoff.failures, this.#final(), { cause: this.#lastError });
  }

  /**
   * True once failing for good: the held token is past its leeway, or, when
   * none was ever had (or its expiry is unknown), enough calls failed.
   */
  #final(): boolean {
    const at = this.givesUpAt;
    if (Number.isFinite(at)) return this.#now() >= at;
    return this.#backoff.failures >= TOKEN_ATTEMPTS;
  }

  #tell(failure: TokenError | undefined): void {
    for (const listener of [...this.#listeners]) listener(failure);
  }

  #times(token: string): { renewAt: number; expiresAt: number } {
    const life = tokenLifetime(token);
    if (!life) return { renewAt: Infinity, expiresAt: Infinity };
    const now = this.#now();
    const lifetime = life.expiresAt - (life.issuedAt ?? now);
    const margin = Math.min(MAX_MARGIN_MS, Math.max(0, lifetime / 4));
    return { renewAt: life.expiresAt - margin, expiresAt: life.expiresAt };
  }
}

const shared = new WeakMap<() => string | Promise<string>, TokenKeeper>();

/**
 * The keeper of `source`: every feed given the same token function shares
 * one keeper, so the function is called once per renewal for all of them
 * and they can share one MoQ session. A string gets a keeper of its own.
 */
export function tokenKeeperFor(
  source: TokenSource | undefined,
  now: () => number = Date.now,
): TokenKeeper {
  if (typeof source !== "function") return new TokenKeeper(source, now);
  let keeper = shared.get(source);
  if (!keeper) shared.set(source, keeper = new TokenKeeper(source, now));
  return keeper;
}
