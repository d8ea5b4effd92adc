import type { LedgerEntry } from "./entry.ts";
import { trackKey, type TrackPath } from "../record/mod.ts";
import { retryUntilDone } from "../timers/mod.ts";
import type { CommitInfo, CommitReader } from "./commit_reader.ts";

export type { CommitInfo, CommitReader } from "./commit_reader.ts";

/** Options of {@link CommitFeed.subscribe}. */
export interface SubscribeOptions {
  /**
   * Entries (and track events) queued for this reader at most (default
   * {@link MAX_QUEUED_ENTRIES}). Past it the reader is behind: the feed keeps
   * only, per track, the sequences it has not told yet, and reads them back
   * from the ledger at the reader's pace.
   */
  readonly maxQueued?: number;
}

/** Reads a track's committed entries with `seq > after`, oldest first (the ledger's storage). */
export type FeedRead = (
  path: TrackPath,
  after: number,
  limit: number,
) => Promise<readonly LedgerEntry[]>;

/** Entries queued for one reader by default before it reads the rest back from the ledger. */
export const MAX_QUEUED_ENTRIES = 8192;

/** Entries read back at once for a reader that is behind. */
const CATCH_UP_PAGE = 256;

type FeedEvent =
  | { readonly path: TrackPath; readonly newest: LedgerEntry | undefined; readonly entries?: never }
  | {
    readonly path: TrackPath;
    readonly entries: readonly LedgerEntry[];
    readonly info: CommitInfo;
  };

/**
 * The ledger's commits as one ordered feed: every track that comes to exist
 * and every committed batch, by this process or (shared ledgers) another, in
 * each track's sequence order. Each reader {@link subscribe}s in its own
 * right and is told on its own turn, after the commit loop has moved on: a
 * reader never holds up a commit, nor the answers that wait on it, nor
 * another reader.
 *
 * A reader that is slow (its calls return promises that take long, or it is
 * told faster than it takes) has a bounded queue. Past the bound its queued
 * batches are dropped and remembered as a range of sequences per track; once
 * it has taken what is left in its queue, those ranges are read back from the
 * ledger, page by page at its pace, and live batches join the ranges until it
 * has caught up. So its memory is bounded by its queue and the number of
 * tracks, and it still receives every committed entry (those retention or
 * compaction removed meanwhile are gone from storage, and from its feed).
 */
export class CommitFeed {
  readonly #read: FeedRead;
  readonly #readers: Subscription[] = [];
  readonly #closing = new AbortController();
  #scheduled = false;

  /** A feed whose readers that fall behind read back through `read`. */
  constructor(read: FeedRead) {
    this.#read = read;
  }

  /** Tells `reader` of everything from now on, until the subscription is closed. */
  subscribe(reader: CommitReader, options: SubscribeOptions = {}): Subscription {
    const subscription = new Subscription(
      reader,
      this.#read,
      options.maxQueued ?? MAX_QUEUED_ENTRIES,
      this.#closing.signal,
      () => {
        const at = this.#readers.indexOf(subscription);
        if (at >= 0) this.#readers.splice(at, 1);
      },
    );
    this.#readers.push(subscription);
    return subscription;
  }

  /** A track exists; `newest` is its newest entry, if any. */
  trackCreated(path: TrackPath, newest: LedgerEntry | undefined): void {
    for (const reader of this.#readers) reader.push({ path, newest });
    this.#schedule();
  }

  /** Entries of one track are committed, oldest first, `learned` of them by another process. */
  committed(path: TrackPath, entries: readonly LedgerEntry[], learned = 0): void {
    if (entries.length === 0) return;
    const info: CommitInfo = { learned, at: performance.timeOrigin + performance.now() };
    for (const reader of this.#readers) reader.push({ path, entries, info });
    this.#schedule();
  }

  // One turn for every reader, in subscription order, once the commit loop has moved on.
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      // A copy: a reader may close its subscription during its turn.
      for (const reader of [...this.#readers]) reader.drain();
    });
  }

  /** Tracks stored before this process started ({@link CommitReader.tracksStored}): told at once. */
  tracksStored(paths: readonly TrackPath[]): void {
    if (paths.length === 0) return;
    for (const reader of this.#readers) reader.stored(paths);
  }

  /** Following other processes' commits failed for now (retried): told at once. */
  followFailed(error: unknown): void {
    for (const reader of this.#readers) reader.failed(error);
  }

  /** Listening to other processes restarted ({@link CommitReader.resynced}): told at once. */
  resynced(): void {
    for (const reader of this.#readers) reader.resynced();
  }

  /** Stops every reader (the ledger is closing). */
  close(): void {
    this.#closing.abort();
    for (const reader of [...this.#readers]) reader.close();
  }
}

/** Sequences a reader that is behind has not been told yet, of one track. */
interface Missed {
  readonly path: TrackPath;
  created: boolean;
  newest: LedgerEntry | undefined;
  // The newest sequence missed before the "created" event came: told before it, the rest after.
  createdAfter: number;
  from: number;
  to: number;
}

/** One reader's place in the {@link CommitFeed}. */
export class Subscription {
  readonly #reader: CommitReader;
  readonly #read: FeedRead;
  readonly #max: number;
  readonly #signal: AbortSignal;
  readonly #leave: () => void;
  #queue: FeedEvent[] = [];
  #head = 0;
  #queued = 0;
  // While not empty, the reader is behind: nothing is queued, everything joins these ranges.
  readonly #missed = new Map<string, Missed>();
  #draining = false;
  #closed = false;
  #overflows = 0;
  #failures = 0;

  /** Made by {@link CommitFeed.subscribe}. */
  constructor(
    reader: CommitReader,
    read: FeedRead,
    max: number,
    signal: AbortSignal,
    leave: () => void,
  ) {
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new RangeError(`Cannot queue "${max}" entries for a reader: must be at least 1`);
    }
    this.#reader = reader;
    this.#read = read;
    this.#max = max;
    this.#signal = signal;
    this.#leave = leave;
  }

  /** Entries and track events queued for the reader now (at most the bound, plus one batch). */
  get queued(): number {
    return this.#queued;
  }

  /** Tracks whose entries the reader, being behind, will read back from the ledger. */
  get behind(): number {
    return this.#missed.size;
  }

  /** Times the reader fell behind its queue's bound. */
  get overflows(): number {
    return this.#overflows;
  }

  /** Calls of the reader that threw or rejected (contained: the commit stands). */
  get failures(): number {
    return this.#failures;
  }

  /** Stops telling the reader anything. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    this.#head = 0;
    this.#queued = 0;
    this.#missed.clear();
    this.#leave();
  }

  /** @internal Takes an event from the feed. */
  push(event: FeedEvent): void {
    if (this.#closed) return;
    if (this.#missed.size > 0) return this.#miss(event);
    this.#queue.push(event);
    this.#queued += event.entries?.length ?? 1;
    if (this.#queued > this.#max) this.#overflow();
  }

  /** @internal Told at once, not queued: it carries no entries, and telling it twice is harmless. */
  stored(paths: readonly TrackPath[]): void {
    if (this.#closed || !this.#reader.tracksStored) return;
    this.#call(() => this.#reader.tracksStored!(paths));
  }

  /** @internal Told at once, not queued. */
  resynced(): void {
    if (this.#closed || !this.#reader.resynced) return;
    this.#call(() => this.#reader.resynced!());
  }

  /** @internal Told at once, not queued. */
  failed(error: unknown): void {
    if (this.#closed || !this.#reader.followFailed) return;
    this.#call(() => this.#reader.followFailed!(error));
  }

  // Past the bound: the queue becomes ranges to read back, and stays so until caught up.
  #overflow(): void {
    this.#overflows++;
    const queue = this.#queue.slice(this.#head);
    this.#queue = [];
    this.#head = 0;
    this.#queued = 0;
    for (const event of queue) this.#miss(event);
  }

  #miss(event: FeedEvent): void {
    const key = trackKey(event.path);
    let missed = this.#missed.get(key);
    if (!missed) {
      missed = {
        path: event.path,
        created: false,
        newest: undefined,
        createdAfter: -1,
        from: Infinity,
        to: -1,
      };
      this.#missed.set(key, missed);
    }
    if (!event.entries) {
      missed.created = true;
      missed.newest = event.newest;
      missed.createdAfter = missed.to;
      return;
    }
    const first = event.entries[0]!.seq;
    const last = event.entries[event.entries.length - 1]!.seq;
    if (first < missed.from) missed.from = first;
    if (last > missed.to) missed.to = last;
  }

  /**
   * @internal Tells the reader what is queued, synchronously while its calls
   * return nothing; a call that returns a promise, or a range to read back,
   * continues the turn once settled (the feed's next turn skips it meanwhile).
   */
  drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    while (!this.#closed) {
      let waiting: Promise<void> | undefined;
      if (this.#head < this.#queue.length) {
        const event = this.#queue[this.#head++]!;
        if (this.#head === this.#queue.length) {
          this.#queue = [];
          this.#head = 0;
        }
        this.#queued -= event.entries?.length ?? 1;
        waiting = this.#tell(event);
      } else if (this.#missed.size > 0) {
        waiting = this.#catchUp();
      } else {
        break;
      }
      if (waiting) {
        const next = () => {
          this.#draining = false;
          this.drain();
        };
        void waiting.then(next, (error) => {
          this.#failed(error);
          next();
        });
        return;
      }
    }
    this.#draining = false;
  }

  #tell(event: FeedEvent): Promise<void> | undefined {
    const reader = this.#reader;
    if (!event.entries) {
      return reader.trackCreated &&
        this.#call(() => reader.trackCreated!(event.path, event.newest));
    }
    return reader.committed &&
      this.#call(() => reader.committed!(event.path, event.entries, event.info));
  }

  // One page of the first track that is behind, read back from the ledger.
  async #catchUp(): Promise<void> {
    const [key, missed] = this.#missed.entries().next().value!;
    // In the order the events came: the entries missed before "created", then it, then the rest.
    if (missed.created && missed.from > missed.createdAfter) {
      missed.created = false;
      const told = this.#tell({ path: missed.path, newest: missed.newest });
      if (told) await told;
    }
    const end = missed.created ? missed.createdAfter : missed.to;
    if (missed.from <= end) {
      let page: readonly LedgerEntry[] = [];
      const limit = Math.min(CATCH_UP_PAGE, end - missed.from + 1);
      const done = await retryUntilDone(async () => {
        page = await this.#read(missed.path, missed.from - 1, limit);
      }, { signal: this.#signal, onError: (error) => this.failed(error) });
      if (!done || this.#closed) return;
      const inRange = page.filter((e) => e.seq >= missed.from && e.seq <= end);
      // Nothing stored in the range any more (retention, compaction): nothing left to tell.
      if (inRange.length === 0) missed.from = end + 1;
      else {
        missed.from = inRange[inRange.length - 1]!.seq + 1;
        const info = { learned: 0, at: performance.timeOrigin + performance.now() };
        const told = this.#tell({ path: missed.path, entries: inRange, info });
        if (told) await told;
      }
    }
    // Batches that arrived meanwhile widened the range; it leaves only once told to its end.
    if (missed.from > missed.to && !missed.created && this.#missed.get(key) === missed) {
      this.#missed.delete(key);
    }
  }

  // A reader's fault never reaches the commit path or another reader.
  #call(call: () => void | Promise<void>): Promise<void> | undefined {
    try {
      const result = call();
      if (result instanceof Promise) return result.catch((error) => this.#failed(error));
    } catch (error) {
      this.#failed(error);
    }
    return undefined;
  }

  #failed(error: unknown): void {
    this.#failures++;
    console.error("A commit reader failed:", error);
  }
}
