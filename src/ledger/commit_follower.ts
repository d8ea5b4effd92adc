import type { LedgerEntry } from "./entry.ts";
import { systemTimers, type Timers } from "../timers/mod.ts";
import { LedgerError } from "./errors.ts";

/** Reads up to `limit` entries with `seq > after`, oldest first. */
export type ReadAfter = (after: number, limit: number) => Promise<LedgerEntry[]>;

/** Options of {@link CommitFollower}. */
export interface CommitFollowerOptions {
  /** Reads committed entries from storage (gaps, and batches other processes committed). */
  readonly read: ReadAfter;
  /**
   * Told of committed entries, oldest first, each exactly once and in
   * sequence order, with how many of them another process committed.
   */
  readonly tell: (entries: readonly LedgerEntry[], learned: number) => void;
  /** The newest sequence already told (or published another way); -1 for none. */
  readonly told: number;
  /** Told when a read failed; it is retried after {@link FOLLOW_RETRY_MS}. */
  readonly onError?: (error: unknown) => void;
  /** Timers of the retry and the read deadline (default the system's). */
  readonly timers?: Timers;
  /**
   * Told when a read went unanswered for {@link FOLLOW_READ_DEADLINE_MS}: the
   * connection it waits on may be dead, so its owner drops connections.
   * The read is then tried again at once, a smaller page.
   */
  readonly onStuck?: () => void;
  /** Default {@link FOLLOW_READ_DEADLINE_MS}. */
  readonly readDeadlineMs?: number;
}

/** Wait before reading again after a failed read, ms. */
export const FOLLOW_RETRY_MS = 1000;

/**
 * Longest wait for one catch-up read, ms. This process's own acknowledged
 * commits wait behind it (they are told in sequence order), so a read stuck
 * on a dead connection must not hold them for the whole storage deadline.
 */
export const FOLLOW_READ_DEADLINE_MS = 1000;

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
  #retry: unknown;
  readonly #timers: Timers;
  #stopped = false;
  // Sequences this process committed and has not told yet (not "learned").
  readonly #own: { first: number; last: number }[] = [];
  // Entries asked for per read: a quarter after a read that did not answer in time, so a
  // page of large records that is merely slow still gets through; doubled back per success.
  #page = PAGE;

  /** Starts after sequence `options.told`. */
  constructor(options: CommitFollowerOptions) {
    this.#options = options;
    this.#timers = options.timers ?? systemTimers;
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
      this.#tell(entries, 0);
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
    if (this.#retry !== undefined) this.#timers.clearTimeout(this.#retry);
    this.#retry = undefined;
  }

  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (!this.#stopped && this.#told < this.#target) {
        const limit = Math.min(this.#page, this.#target - this.#told);
        const read = await this.#bounded(this.#told, limit);
        if (read === undefined) {
          // Unanswered in time: connections were dropped; ask again now, for less.
          this.#page = Math.max(1, Math.floor(this.#page / 4));
          continue;
        }
        this.#page = Math.min(PAGE, this.#page * 2);
        const page = read.filter((e) => e.seq > this.#told);
        if (this.#stopped) break;
        if (page.length === 0) {
          // Storage does not show them yet (a read that raced a reconnection): look again later.
          this.#later();
          break;
        }
        this.#told = page[page.length - 1]!.seq;
        this.#tell(page, this.#countLearned(page));
      }
    } catch (error) {
      this.#options.onError?.(error);
      this.#later();
    } finally {
      this.#running = false;
    }
  }

  // The read, or undefined when it was not answered within the read deadline.
  async #bounded(after: number, limit: number): Promise<LedgerEntry[] | undefined> {
    const deadline = this.#options.readDeadlineMs ?? FOLLOW_READ_DEADLINE_MS;
    const reading = this.#options.read(after, limit);
    let timer: unknown;
    const late = new Promise<undefined>((resolve) => {
      timer = this.#timers.setTimeout(() => resolve(undefined), deadline);
    });
    try {
      const first = await Promise.race([reading, late]);
      if (first !== undefined) return first;
      // Its outcome no longer matters (the connections it used are dropped now).
      reading.catch(() => {});
      this.#options.onStuck?.();
      this.#options.onError?.(
        new LedgerError("unavailable", `A catch-up read did not answer within ${deadline} ms`),
      );
      return undefined;
    } finally {
      this.#timers.clearTimeout(timer);
    }
  }

  #later(): void {
    if (this.#stopped || this.#retry !== undefined) return;
    this.#retry = this.#timers.setTimeout(() => {
      this.#retry = undefined;
      this.learn(this.#target);
    }, FOLLOW_RETRY_MS);
    this.#timers.unref?.(this.#retry);
  }

  #countLearned(page: readonly LedgerEntry[]): number {
    let learned = 0;
    for (const entry of page) {
      while (this.#own.length > 0 && this.#own[0]!.last < entry.seq) this.#own.shift();
      const own = this.#own[0];
      if (!own || entry.seq < own.first) learned++;
    }
    return learned;
  }

  #tell(entries: readonly LedgerEntry[], learned: number): void {
    try {
      this.#options.tell(entries, learned);
    } catch (error) {
      // A listener's failure must never undo or block a durable commit.
      console.error("Commit listener failed:", error);
    }
  }
}
