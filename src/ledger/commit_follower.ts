import type { LedgerEntry } from "./entry.ts";

/** Reads up to `limit` entries with `seq > after`, oldest first. */
export type ReadAfter = (after: number, limit: number) => Promise<LedgerEntry[]>;

/** Options of {@link CommitFollower}. */
export interface CommitFollowerOptions {
  /** Reads committed entries from storage (gaps, and batches other processes committed). */
  readonly read: ReadAfter;
  /** Told of committed entries, oldest first, each exactly once and in sequence order. */
  readonly tell: (entries: readonly LedgerEntry[]) => void;
  /** The newest sequence already told (or published another way); -1 for none. */
  readonly told: number;
  /** Told how many entries it read that another process committed. */
  readonly onLearned?: (count: number) => void;
  /** Told when a read failed; it is retried after {@link FOLLOW_RETRY_MS}. */
  readonly onError?: (error: unknown) => void;
}

/** Wait before reading again after a failed read, ms. */
export const FOLLOW_RETRY_MS = 1000;

/** Entries read at once while catching up. */
const PAGE = 256;

/**
 * Tells a track's listeners of every committed entry in sequence order,
 * whichever process committed it. With one writer every batch follows the
 * last one told and is passed on at once. With several, a batch of this
 * process may be numbered after another's that it has not heard of yet:
 * then the entries in between are read from storage first, so listeners
 * (the live tracks) never see a gap or a reordering. A notice that another
 * process committed up to some sequence is caught up the same way.
 */
export class CommitFollower {
  readonly #options: CommitFollowerOptions;
  #told: number;
  #target: number;
  #running = false;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  // Sequences this process committed and has not told yet (not "learned").
  readonly #own: { first: number; last: number }[] = [];

  /** Starts after sequence `options.told`. */
  constructor(options: CommitFollowerOptions) {
    this.#options = options;
    this.#told = options.told;
    this.#target = options.told;
  }

  /** The newest sequence told. */
  get told(): number {
    return this.#told;
  }

  /** This process committed `entries` (consecutive, oldest first). */
  own(entries: readonly LedgerEntry[]): void {
    const first = entries[0]?.seq;
    const last = entries[entries.length - 1]?.seq;
    if (first === undefined || last === undefined || last <= this.#told) return;
    if (!this.#running && first === this.#told + 1) {
      this.#told = last;
      if (this.#target < last) this.#target = last;
      this.#tell(entries);
      return;
    }
    this.#own.push({ first, last });
    this.learn(last);
  }

  /** Entries up to `last` are committed (by any process): tells the missing ones. */
  learn(last: number): void {
    if (last > this.#target) this.#target = last;
    if (this.#target > this.#told && !this.#running && this.#retry === undefined) void this.#run();
  }

  /** Stops reading; later calls tell nothing new. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#retry);
    this.#retry = undefined;
  }

  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (!this.#stopped && this.#told < this.#target) {
        const limit = Math.min(PAGE, this.#target - this.#told);
        const page = (await this.#options.read(this.#told, limit)).filter((e) =>
          e.seq > this.#told
        );
        if (this.#stopped) break;
        if (page.length === 0) {
          // Storage does not show them yet (a read that raced a reconnection): look again later.
          this.#later();
          break;
        }
        this.#told = page[page.length - 1]!.seq;
        this.#countLearned(page);
        this.#tell(page);
      }
    } catch (error) {
      this.#options.onError?.(error);
      this.#later();
    } finally {
      this.#running = false;
    }
  }

  #later(): void {
    if (this.#stopped || this.#retry !== undefined) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.learn(this.#target);
    }, FOLLOW_RETRY_MS);
    Deno.unrefTimer(this.#retry);
  }

  #countLearned(page: readonly LedgerEntry[]): void {
    let learned = 0;
    for (const entry of page) {
      while (this.#own.length > 0 && this.#own[0]!.last < entry.seq) this.#own.shift();
      const own = this.#own[0];
      if (!own || entry.seq < own.first) learned++;
    }
    if (learned > 0) this.#options.onLearned?.(learned);
  }

  #tell(entries: readonly LedgerEntry[]): void {
    try {
      this.#options.tell(entries);
    } catch (error) {
      // A listener's failure must never undo or block a durable commit.
      console.error("Commit listener failed:", error);
    }
  }
}
