/** Credentials for HTTP and MoQ: a fixed token, or a function that returns a fresh one. */

/** A bearer token, or a function returning a fresh one (called again before the current expires). */
export type TokenSource = string | (() => string | Promise<string>);

/** Longest head start a refresh takes before expiry, ms. */
const MAX_MARGIN_MS = 60_000;

/** When a compact JWT's `exp` and `iat` say it expires, ms since the epoch; undefined if unknown. */
export function tokenLifetime(token: string): { issuedAt?: number; expiresAt: number } | undefined {
  const part = token.split(".")[1];
  if (part === undefined) return undefined;
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4))) as {
      exp?: unknown;
      iat?: unknown;
    };
    if (typeof claims.exp !== "number") return undefined;
    return {
      expiresAt: claims.exp * 1000,
      ...(typeof claims.iat === "number" ? { issuedAt: claims.iat * 1000 } : {}),
    };
  } catch {
    return undefined; // not a JWT: its expiry is unknown
  }
}

/**
 * Holds the current token of a {@linkcode TokenSource}: a function is asked
 * again a quarter of the token's lifetime (at most a minute) before its
 * `exp`, or at once after the server refused it.
 */
export class TokenKeeper {
  readonly #source: TokenSource | undefined;
  readonly #now: () => number;
  #current: { token: string; renewAt: number } | undefined;
  #pending: Promise<string> | undefined;

  /** Keeps `source`'s token; `now` is the clock in ms. */
  constructor(source: TokenSource | undefined, now: () => number = Date.now) {
    this.#source = source;
    this.#now = now;
  }

  /** True when the source can give a fresh token (a function). */
  get refreshable(): boolean {
    return typeof this.#source === "function";
  }

  /** When the current token should be replaced, ms since the epoch (Infinity when never). */
  get renewAt(): number {
    return this.#current?.renewAt ?? Infinity;
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

  /** Asks the source for a new token (shared by concurrent callers). */
  refresh(): Promise<string | undefined> {
    const source = this.#source;
    if (typeof source !== "function") return Promise.resolve(source);
    this.#pending ??= (async () => {
      try {
        const token = await source();
        if (typeof token !== "string" || token === "") {
          throw new TypeError("The token function returned no token");
        }
        this.#current = { token, renewAt: this.#renewAt(token) };
        return token;
      } finally {
        this.#pending = undefined;
      }
    })();
    return this.#pending;
  }

  #renewAt(token: string): number {
    const life = tokenLifetime(token);
    if (!life) return Infinity;
    const now = this.#now();
    const lifetime = life.expiresAt - (life.issuedAt ?? now);
    return life.expiresAt - Math.min(MAX_MARGIN_MS, Math.max(0, lifetime / 4));
  }
}
