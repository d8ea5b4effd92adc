import { errorText } from "../error_text/mod.ts";
import { type KeySet, parseKeySet } from "./key_set.ts";
import { PollingKeySource, type PollOptions } from "./key_source.ts";

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

  /** Reads the file; undefined when its text has not changed. */
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

  /** A file has nothing to fall back on: the first failure stands. */
  protected fallback(cause: unknown): Promise<KeySet> {
    return Promise.reject(cause);
  }

  /** Reports a failure once, until a different one or a success follows. */
  protected override reportFailure(error: unknown): void {
    // A file left broken is polled every second; say so once per distinct failure.
    const message = errorText(error);
    if (message === this.#lastFailure) return;
    this.#lastFailure = message;
    super.reportFailure(error);
  }
}
