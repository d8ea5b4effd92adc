import { errorText } from "../errors/mod.ts";
import { type KeySet, MAX_KEY_SET_BYTES, parseKeySet } from "./key_set.ts";

/** Timer functions a key source schedules its polls with; tests pass their own. */
export interface Timers {
  /** Schedules `fn` once after `ms` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a pending `setTimeout`. */
  clearTimeout(handle: unknown): void;
}

/** Where verification keys come from, kept fresh until closed. */
export interface KeySource {
  /** Where the keys come from (a path or URL), for the startup summary. */
  readonly location: string;
  /**
   * Loads the first key set and starts keeping it fresh; rejects when no set
   * can be had (nothing readable and no usable cache).
   */
  start(): Promise<KeySet>;
  /** The key set in force now (the last good one); throws before `start` resolved. */
  current(): KeySet;
  /**
   * Loads the set again now; resolves true when a new set came into force.
   * Never rejects: a failed refresh is logged and the last good set stays.
   * Concurrent calls share one attempt.
   */
  refresh(): Promise<boolean>;
  /** Stops polling and aborts any request in flight. */
  close(): void;
}

/** Options shared by both kinds of key source. */
export interface PollOptions {
  /** Milliseconds between polls; 0 disables polling (refresh only when asked). */
  pollMs?: number;
  /** Timer functions (default: the global ones). */
  timers?: Timers;
  /** Where refresh failures and fallbacks are reported (default: console.warn). */
  log?: (message: string) => void;
}

const defaultTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as Parameters<typeof clearTimeout>[0]),
};

/** Polling, serialised refreshes and last-good-set keeping, shared by the sources. */
abstract class PollingKeySource implements KeySource {
  abstract readonly location: string;
  protected readonly timers: Timers;
  protected readonly log: (message: string) => void;
  protected closed = false;
  readonly #pollMs: number;
  #set: KeySet | undefined;
  #timer: unknown;
  #inFlight: Promise<boolean> | undefined;
  #started = false;

  constructor(defaultPollMs: number, options: PollOptions) {
    this.#pollMs = options.pollMs ?? defaultPollMs;
    if (!Number.isFinite(this.#pollMs) || this.#pollMs < 0) {
      throw new RangeError(`Poll interval ${this.#pollMs} ms is not a non-negative number`);
    }
    this.timers = options.timers ?? defaultTimers;
    this.log = options.log ?? ((message) => console.warn(message));
  }

  /** Loads the set once; undefined means "unchanged". Throws on failure. */
  protected abstract load(): Promise<KeySet | undefined>;
  /** Finds the first set when `load` failed at start (e.g. from a cache); throws when none. */
  protected abstract fallback(cause: unknown): Promise<KeySet>;

  async start(): Promise<KeySet> {
    if (this.#started) throw new Error(`Key source ${this.location} was started twice`);
    this.#started = true;
    let set: KeySet | undefined;
    try {
      set = await this.load();
    } catch (error) {
      set = await this.fallback(error);
    }
    if (set === undefined) throw new Error(`Key source ${this.location} gave no key set`);
    this.#set = set;
    this.#schedule();
    return set;
  }

  current(): KeySet {
    if (this.#set === undefined) throw new Error(`Key source ${this.location} is not started`);
    return this.#set;
  }

  refresh(): Promise<boolean> {
    if (this.closed || this.#set === undefined) return Promise.resolve(false);
    this.#inFlight ??= this.#refreshOnce().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #refreshOnce(): Promise<boolean> {
    try {
      const set = await this.load();
      if (set === undefined || this.closed) return false;
      this.#set = set;
      return true;
    } catch (error) {
      if (!this.closed) this.reportFailure(error);
      return false;
    }
  }

  /** Reports a failed refresh; subclasses may silence repeats. */
  protected reportFailure(error: unknown): void {
    this.log(
      `Key set refresh from ${this.location} failed, keeping the last good set: ${
        errorText(error)
      }`,
    );
  }

  #schedule(): void {
    if (this.closed || this.#pollMs === 0) return;
    this.#timer = this.timers.setTimeout(() => {
      this.#timer = undefined;
      this.refresh().finally(() => this.#schedule());
    }, this.#pollMs);
  }

  close(): void {
    this.closed = true;
    if (this.#timer !== undefined) this.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** Options for a key set read from a file. */
export interface FileKeySourceOptions extends PollOptions {
  /** Reads the file's text (default: Deno.readTextFile). */
  readTextFile?: (path: string) => Promise<string>;
}

/**
 * A key set in a file, read at start and re-read when its content changes
 * (checked every `pollMs`, default 1000 ms; the file is small, so its text is
 * compared rather than its mtime, which misses quick successive writes).
 */
export class FileKeySource extends PollingKeySource {
  /** The file's path. */
  readonly location: string;
  readonly #read: (path: string) => Promise<string>;
  #lastText: string | undefined;
  #lastFailure: string | undefined;

  /** Watches `path`; call `start()` to load it. */
  constructor(path: string, options: FileKeySourceOptions = {}) {
    super(1000, options);
    this.location = path;
    this.#read = options.readTextFile ?? ((file) => Deno.readTextFile(file));
  }

  protected async load(): Promise<KeySet | undefined> {
    let text: string;
    try {
      text = await this.#read(this.location);
    } catch (error) {
      throw new Error(`Cannot read key set file ${this.location}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    if (text === this.#lastText) {
      this.#lastFailure = undefined;
      return undefined;
    }
    try {
      const set = await parseKeySet(text);
      this.#lastText = text;
      this.#lastFailure = undefined;
      return set;
    } catch (error) {
      throw new Error(`Key set file ${this.location} is refused: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  protected fallback(cause: unknown): Promise<KeySet> {
    return Promise.reject(cause);
  }

  protected override reportFailure(error: unknown): void {
    // A file left broken is polled every second; say so once per distinct failure.
    const message = errorText(error);
    if (message === this.#lastFailure) return;
    this.#lastFailure = message;
    super.reportFailure(error);
  }
}

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
}

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
  }

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
      let response: Response;
      try {
        response = await this.#fetch(this.location, { headers, signal: controller.signal });
      } catch (error) {
        const reason = controller.signal.aborted ? controller.signal.reason : error;
        throw new Error(`Cannot fetch key set ${this.location}: ${(reason as Error).message}`, {
          cause: error,
        });
      }
      if (response.status === 304) {
        await response.body?.cancel();
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
      await this.#writeCache(text);
      return set;
    } finally {
      this.timers.clearTimeout(timer);
      this.#controllers.delete(controller);
    }
  }

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
    this.log(`${reason}; using the key set cached in ${this.#cacheFile} until the URL answers`);
    return set;
  }

  async #writeCache(text: string): Promise<void> {
    const file = this.#cacheFile;
    if (file === undefined || text === this.#cachedText) return;
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

/** Options for `keySourceFrom`. */
export interface KeySourceOptions extends UrlKeySourceOptions, FileKeySourceOptions {}

/**
 * The key source `value` names (SLUICE_AUTH_KEYS): an https URL, or a file
 * path (a `file:` URL is read as its path). A `http:` URL is refused unless
 * `allowHttp` is set (tests only); any other scheme is refused.
 *
 * @example
 * ```ts
 * const source = keySourceFrom("https://auth.example/keys.json", { cacheFile: "/var/cache/keys.json" });
 * ```
 */
export function keySourceFrom(value: string, options: KeySourceOptions = {}): KeySource {
  if (value === "") throw new TypeError("Key set location is empty");
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) return new FileKeySource(value, options);
  if (scheme === "file") {
    let path: string;
    try {
      path = decodeURIComponent(new URL(value).pathname);
    } catch {
      throw new TypeError(`Key set location "${value}" is not a valid file URL`);
    }
    return new FileKeySource(path, options);
  }
  if (scheme === "https" || scheme === "http") return new UrlKeySource(value, options);
  throw new TypeError(`Key set location "${value}" is neither a file path nor an https URL`);
}

/**
 * A key set held in memory and replaced by hand: for embedding sluice with
 * keys from elsewhere, and for tests.
 */
export class MemoryKeySource implements KeySource {
  /** Describes the source in summaries. */
  readonly location: string;
  #set: KeySet;

  /** Holds `set` until `replace` is called. */
  constructor(set: KeySet, location = "memory") {
    this.#set = set;
    this.location = location;
  }

  /** Resolves with the set given at construction (or since replaced). */
  start(): Promise<KeySet> {
    return Promise.resolve(this.#set);
  }

  /** The set in force. */
  current(): KeySet {
    return this.#set;
  }

  /** Puts `set` in force from the next verification on. */
  replace(set: KeySet): void {
    this.#set = set;
  }

  /** Nothing to reload; resolves false. */
  refresh(): Promise<boolean> {
    return Promise.resolve(false);
  }

  /** Nothing to stop. */
  close(): void {}
}
