import { errorText } from "../error_text/mod.ts";
import { type KeySet, MAX_KEY_SET_BYTES, parseKeySet } from "./key_set.ts";
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
