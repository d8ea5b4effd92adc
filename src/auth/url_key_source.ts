import { errorText, redactUrl } from "../error_text/mod.ts";
import { KeySet, MAX_KEY_SET_BYTES, parseKeySet } from "./key_set.ts";
import { PollingKeySource, type PollOptions } from "./key_source.ts";

/** Options for a key set fetched from a URL. */
export interface UrlKeySourceOptions extends PollOptions {
  /** Sent as `Authorization: Bearer <token>` (SLUICE_RELAY_TOKEN). */
  bearerToken?: string;
  /** File keeping the last good set between runs; used at start when the URL fails. */
  cacheFile?: string;
  /** Fetch function (default: the global fetch). */
  fetch?: typeof fetch;
  /** Milliseconds a request may take before it is abandoned (default 10000). */
  timeoutMs?: number;
  /** Accept plain http URLs; for tests only, production configuration requires https. */
  allowHttp?: boolean;
  /**
   * How long the last good set stays in force while the URL cannot be
   * reached or answers wrongly, ms (default {@linkcode MAX_KEY_SET_STALENESS_MS};
   * 0 keeps it forever). Past it the set is treated as empty: every
   * credential is refused until the URL answers again.
   */
  maxStaleMs?: number;
  /** Wall clock in ms, for the staleness (default Date.now). */
  now?: () => number;
}

/**
 * The default {@linkcode UrlKeySourceOptions.maxStaleMs}: one hour, the
 * longest a credential may live. Blocking the key set URL must not keep a
 * removed key trusted for longer than the credentials it signed could live.
 */
export const MAX_KEY_SET_STALENESS_MS = 3_600_000;

/** What a stale source puts in force: no key, so every credential is refused. */
const NO_KEYS = new KeySet([]);

/** Redirects followed at most for one key set request. */
export const MAX_KEY_SET_REDIRECTS = 5;

/**
 * A key set fetched from an https URL at start and polled every `pollMs`
 * (default 30 s) with `If-None-Match`; a good set is copied to `cacheFile`.
 */
export class UrlKeySource extends PollingKeySource {
  /** The URL. */
  readonly location: string;
  readonly #fetch: typeof fetch;
  readonly #bearerToken: string | undefined;
  readonly #cacheFile: string | undefined;
  readonly #timeoutMs: number;
  #etag: string | undefined;
  #cachedText: string | undefined;
  readonly #controllers = new Set<AbortController>();
  readonly #maxStaleMs: number;
  readonly #now: () => number;
  /** When the URL last answered with a good set or 304 (ms); the start counts as one. */
  #confirmedAt: number;
  #stale = false;

  /** Polls `url`; call `start()` to fetch it the first time. */
  constructor(url: string, options: UrlKeySourceOptions = {}) {
    super(30_000, options);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(`Key set URL "${url}" is not a URL`);
    }
    const allowed = options.allowHttp ? ["https:", "http:"] : ["https:"];
    if (!allowed.includes(parsed.protocol)) {
      throw new TypeError(`Key set URL "${url}" must use https`);
    }
    this.location = parsed.href;
    this.#fetch = options.fetch ?? fetch;
    this.#bearerToken = options.bearerToken;
    this.#cacheFile = options.cacheFile;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#maxStaleMs = options.maxStaleMs ?? MAX_KEY_SET_STALENESS_MS;
    this.#now = options.now ?? Date.now;
    this.#confirmedAt = this.#now();
  }

  /**
   * The last good set, or no key at all once the URL has not confirmed it
   * for longer than `maxStaleMs` (fail closed; logged once).
   */
  override current(): KeySet {
    const set = super.current();
    const stale = this.#maxStaleMs > 0 && this.#now() - this.#confirmedAt > this.#maxStaleMs;
    if (stale !== this.#stale) {
      this.#stale = stale;
      this.log(
        stale
          ? `Key set ${this.location} has not answered for over ${
            Math.round(this.#maxStaleMs / 1000)
          } s: refusing every credential until it does`
          : `Key set ${this.location} answers again; its keys are back in force`,
      );
    }
    return stale ? NO_KEYS : set;
  }

  /** Fetches the set; undefined when the server answers 304 Not Modified. */
  protected async load(): Promise<KeySet | undefined> {
    const headers = new Headers({ accept: "application/jwk-set+json, application/json" });
    if (this.#etag !== undefined) headers.set("if-none-match", this.#etag);
    if (this.#bearerToken !== undefined) {
      headers.set("authorization", `Bearer ${this.#bearerToken}`);
    }
    const controller = new AbortController();
    this.#controllers.add(controller);
    const timer = this.timers.setTimeout(
      () => controller.abort(new Error(`no answer within ${this.#timeoutMs} ms`)),
      this.#timeoutMs,
    );
    try {
      const response = await this.#fetchFollowing(headers, controller.signal);
      if (response.status === 304) {
        await response.body?.cancel();
        this.#confirmedAt = this.#now();
        await this.#touchCache();
        return undefined;
      }
      if (response.status !== 200) {
        await response.body?.cancel();
        throw new Error(`Key set ${this.location} answered HTTP ${response.status}`);
      }
      const text = await readLimited(response, MAX_KEY_SET_BYTES, this.location);
      let set: KeySet;
      try {
        set = await parseKeySet(text);
      } catch (error) {
        throw new Error(`Key set ${this.location} is refused: ${(error as Error).message}`, {
          cause: error,
        });
      }
      this.#etag = response.headers.get("etag") ?? undefined;
      this.#confirmedAt = this.#now();
      await this.#writeCache(text);
      return set;
    } finally {
      this.timers.clearTimeout(timer);
      this.#controllers.delete(controller);
    }
  }

  /**
   * Fetches the set's URL, following redirects by hand: each must stay
   * https (http only when the configured URL was http, in tests), and the
   * bearer token goes to the configured URL's origin only.
   */
  async #fetchFollowing(headers: Headers, signal: AbortSignal): Promise<Response> {
    let url = new URL(this.location);
    for (let hop = 0;; hop++) {
      let response: Response;
      try {
        response = await this.#fetch(url.href, { headers, signal, redirect: "manual" });
      } catch (error) {
        const reason = signal.aborted ? signal.reason : error;
        throw new Error(`Cannot fetch key set ${this.location}: ${(reason as Error).message}`, {
          cause: error,
        });
      }
      const location = response.headers.get("location");
      if (response.status < 300 || response.status > 399 || location === null) return response;
      await response.body?.cancel();
      if (hop >= MAX_KEY_SET_REDIRECTS) {
        throw new Error(
          `Key set ${this.location} redirects more than ${MAX_KEY_SET_REDIRECTS} times`,
        );
      }
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new Error(`Key set ${this.location} redirects to an invalid URL`);
      }
      const configured = new URL(this.location).protocol;
      if (next.protocol !== "https:" && !(configured === "http:" && next.protocol === "http:")) {
        throw new Error(
          `Key set ${this.location} redirects to "${
            redactUrl(next)
          }"; a key set is fetched over https only`,
        );
      }
      if (next.origin !== new URL(this.location).origin) headers.delete("authorization");
      url = next;
    }
  }

  /** Reads the cache file when the URL fails at start; rethrows without one. */
  protected async fallback(cause: unknown): Promise<KeySet> {
    const reason = errorText(cause);
    if (this.#cacheFile === undefined) throw cause;
    let text: string;
    try {
      text = await Deno.readTextFile(this.#cacheFile);
    } catch (error) {
      throw new Error(
        `${reason}; and the key set cache ${this.#cacheFile} cannot be read: ${
          (error as Error).message
        }`,
        { cause },
      );
    }
    let set: KeySet;
    try {
      set = await parseKeySet(text);
    } catch (error) {
      throw new Error(
        `${reason}; and the key set cache ${this.#cacheFile} is refused: ${
          (error as Error).message
        }`,
        { cause },
      );
    }
    this.#cachedText = text;
    // The cache was last written (or touched) when the URL last confirmed the set: its age
    // counts toward the staleness bound, so restarting does not make an old set fresh again.
    const written = (await Deno.stat(this.#cacheFile).catch(() => undefined))?.mtime?.getTime();
    if (written !== undefined) this.#confirmedAt = Math.min(this.#confirmedAt, written);
    this.log(`${reason}; using the key set cached in ${this.#cacheFile} until the URL answers`);
    return set;
  }

  // The URL confirmed the cached set (304): the cache's time says so, for a later start.
  async #touchCache(): Promise<void> {
    const file = this.#cacheFile;
    if (file === undefined || this.#cachedText === undefined) return;
    const at = new Date(this.#now());
    await Deno.utime(file, at, at).catch(() => {});
  }

  async #writeCache(text: string): Promise<void> {
    const file = this.#cacheFile;
    if (file === undefined) return;
    if (text === this.#cachedText) return await this.#touchCache();
    // Write beside and rename, so a crash never leaves a half-written cache.
    const temporary = `${file}.${crypto.randomUUID()}.tmp`;
    try {
      await Deno.writeTextFile(temporary, text, { mode: 0o644 });
      await Deno.rename(temporary, file);
      this.#cachedText = text;
    } catch (error) {
      // Best-effort cleanup; the write failure is logged just below.
      await Deno.remove(temporary).catch(() => {});
      this.log(`Cannot write key set cache ${file}: ${(error as Error).message}`);
    }
  }

  /** Stops polling and aborts any request in flight. */
  override close(): void {
    super.close();
    for (const controller of this.#controllers) controller.abort(new Error("key source closed"));
  }
}

async function readLimited(response: Response, limit: number, where: string): Promise<string> {
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > limit) throw new RangeError(`Key set ${where} is larger than ${limit} bytes`);
      chunks.push(value);
    }
  } catch (error) {
    // Releasing the body is best effort; the read error is rethrown below.
    await reader.cancel().catch(() => {});
    throw error;
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new SyntaxError(`Key set ${where} is not UTF-8 text`);
  }
}
