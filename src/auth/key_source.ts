import { errorText } from "../error_text/mod.ts";
import type { KeySet } from "./key_set.ts";

import { systemTimers, type Timers } from "../timers/mod.ts";

export type { Timers };

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

/**
 * Polling, serialised refreshes and last-good-set keeping, shared by the
 * file and URL sources: a subclass says how to load a set and what to do when
 * the first load fails.
 */
export abstract class PollingKeySource implements KeySource {
  /** Where the keys come from (a path or URL), for the startup summary. */
  abstract readonly location: string;
  /** The timer functions polls and request timeouts are scheduled with. */
  protected readonly timers: Timers;
  /** Where refresh failures and fallbacks are reported. */
  protected readonly log: (message: string) => void;
  /** Set by `close`; a closed source neither polls nor takes a new set. */
  protected closed = false;
  readonly #pollMs: number;
  #set: KeySet | undefined;
  #timer: unknown;
  #inFlight: Promise<boolean> | undefined;
  #started = false;

  /** Polls every `options.pollMs`, or every `defaultPollMs` when that is not given. */
  constructor(defaultPollMs: number, options: PollOptions) {
    this.#pollMs = options.pollMs ?? defaultPollMs;
    if (!Number.isFinite(this.#pollMs) || this.#pollMs < 0) {
      throw new RangeError(`Poll interval ${this.#pollMs} ms is not a non-negative number`);
    }
    this.timers = options.timers ?? systemTimers;
    this.log = options.log ?? ((message) => console.warn(message));
  }

  /** Loads the set once; undefined means "unchanged". Throws on failure. */
  protected abstract load(): Promise<KeySet | undefined>;
  /** Finds the first set when `load` failed at start (e.g. from a cache); throws when none. */
  protected abstract fallback(cause: unknown): Promise<KeySet>;

  /** Loads the first set (or the fallback's) and starts polling. */
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

  /** The set in force now; throws before `start` resolved. */
  current(): KeySet {
    if (this.#set === undefined) throw new Error(`Key source ${this.location} is not started`);
    return this.#set;
  }

  /** Loads the set again now; concurrent calls share one attempt. Never rejects. */
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

  /** Stops polling. */
  close(): void {
    this.closed = true;
    if (this.#timer !== undefined) this.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
