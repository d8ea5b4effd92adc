import type { KeySet } from "./key_set.ts";
import type { KeySource } from "./key_source.ts";

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
