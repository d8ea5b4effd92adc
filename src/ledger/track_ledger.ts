import type { CommitOutcome, TrackBackend } from "./backend.ts";
import { CommitFollower } from "./commit_follower.ts";
import { CURRENT_EPOCH, type EntryDraft, entryGroup, type LedgerEntry } from "./entry.ts";
import { type EntryRange, entryStream, type EntryStreamOptions } from "./entry_stream.ts";
import { LedgerError } from "./errors.ts";
import type { TrackPath } from "../record/mod.ts";

/** Told of every committed batch of a track, in commit order, before the appenders resume. */
export type CommitListener = (ledger: TrackLedger, entries: readonly LedgerEntry[]) => void;

/** Returns the current time in Unix nanoseconds; injected so tests are exact. */
export type NanoClock = () => bigint;

/** The system clock in Unix nanoseconds (millisecond resolution plus a monotonic offset). */
export function systemNanoClock(): NanoClock {
  // Integer arithmetic: Unix nanoseconds exceed 2^53, so a float would round them.
  const originNs = BigInt(Date.now()) * 1_000_000n;
  const originPerf = performance.now();
  return () => originNs + BigInt(Math.round((performance.now() - originPerf) * 1e6));
}

/** Result of {@link TrackLedger.redact}. */
export type RedactOutcome = { readonly redaction: LedgerEntry; readonly already?: undefined } | {
  readonly already: true;
  readonly redaction?: undefined;
};

/** Options of {@link TrackLedger.open} beyond the positional ones. */
export interface TrackLedgerHooks {
  /** Told how many entries it read that another process committed (shared backends). */
  readonly onLearned?: (ledger: TrackLedger, count: number) => void;
  /** Told when reading others' commits failed (it retries by itself). */
  readonly onFollowError?: (error: unknown) => void;
  /** Told of every batch this process committed, by its number of new entries. */
  readonly onBatch?: (ledger: TrackLedger, count: number) => void;
}

interface Pending {
  readonly draft: EntryDraft;
  readonly resolve: (outcome: CommitOutcome) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * One track's ledger: numbers entries, group-commits them through a
 * backend, and keeps the newest entry in memory so the hot path never reads.
 *
 * Appends that arrive while a commit is in flight are committed together in
 * the next batch, so throughput grows with concurrency, not storage latency.
 *
 * Over a backend several processes write at once (one with
 * `TrackBackend.commit`), the backend numbers each batch in the order the
 * storage decides, and commits of other processes are learned through
 * {@link learn}; listeners are told of every entry of the track, whoever
 * committed it, in sequence order (a {@link CommitFollower}).
 */
export class TrackLedger {
  /** The track this ledger stores. */
  readonly path: TrackPath;
  readonly #backend: TrackBackend;
  readonly #clock: NanoClock;
  readonly #maxBatch: number;
  readonly #onCommit: CommitListener | undefined;
  readonly #hooks: TrackLedgerHooks;
  #follower!: CommitFollower;
  #newest: LedgerEntry | undefined;
  #queue: Pending[] = [];
  #committing = false;
  #lastWallclock = 0n;
  #redactions: Promise<void> = Promise.resolve();
  /** Redactions committed whose payload erasure has not succeeded yet, by redacted seq. */
  readonly #erasing = new Map<number, LedgerEntry>();
  // When a batch fails we no longer know what reached storage; re-read the tail first.
  #tailUncertain = false;

  private constructor(
    path: TrackPath,
    backend: TrackBackend,
    clock: NanoClock,
    maxBatch: number,
    onCommit: CommitListener | undefined,
    hooks: TrackLedgerHooks,
  ) {
    this.path = path;
    this.#hooks = hooks;
    this.#onCommit = onCommit;
    this.#backend = backend;
    this.#clock = clock;
    this.#maxBatch = maxBatch;
  }

  /** Opens a ledger over a track backend, reading its newest entry once. */
  static async open(
    path: TrackPath,
    backend: TrackBackend,
    clock: NanoClock,
    maxBatch = 1024,
    onCommit?: CommitListener,
    hooks: TrackLedgerHooks = {},
  ): Promise<TrackLedger> {
    const ledger = new TrackLedger(path, backend, clock, maxBatch, onCommit, hooks);
    ledger.#newest = await backend.latest();
    ledger.#lastWallclock = ledger.#newest?.wallclock ?? 0n;
    ledger.#follower = new CommitFollower({
      read: (after, limit) => backend.readAfter(after, limit),
      tell: (entries) => ledger.#told(entries),
      told: ledger.#newest?.seq ?? -1,
      onLearned: (count) => hooks.onLearned?.(ledger, count),
      ...(hooks.onFollowError ? { onError: hooks.onFollowError } : {}),
    });
    return ledger;
  }

  /** True when several processes may write this track (the backend numbers entries). */
  get shared(): boolean {
    return this.#backend.commit !== undefined;
  }

  /**
   * Entries up to sequence `last` are committed, perhaps by another
   * process: listeners are told of those they have not seen, in order.
   */
  learn(last: number): void {
    this.#follower.learn(last);
  }

  /** Stops following other processes' commits (the ledger is closing). */
  stopFollowing(): void {
    this.#follower.stop();
  }

  /** The newest committed entry (record or redaction), if any. */
  get newest(): LedgerEntry | undefined {
    return this.#newest;
  }

  /** The backend, for reads that bypass the commit queue. */
  get backend(): TrackBackend {
    return this.#backend;
  }

  /**
   * The track's entries from any point, forward or backward, as a stream
   * that pages storage only as fast as it is read (see {@link entryStream}).
   */
  entries(range: EntryRange = {}, options: EntryStreamOptions = {}): ReadableStream<LedgerEntry> {
    return entryStream(this.#backend, range, options);
  }

  /** Commits one entry; resolves with it once it is durable. */
  async append(draft: EntryDraft): Promise<LedgerEntry> {
    return (await this.commit(draft)).entry;
  }

  /**
   * Commits one entry; resolves once it is durable. On a shared backend a
   * draft whose sender and Idempotency-Key another process stored already
   * resolves with that entry, marked `existing`, and stores nothing.
   */
  commit(draft: EntryDraft): Promise<CommitOutcome> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ draft, resolve, reject });
      if (!this.#committing) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#committing = true;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#maxBatch);
        try {
          if (this.#backend.commit) {
            await this.#commitShared(batch);
            continue;
          }
          if (this.#tailUncertain) await this.#settleTail();
          const entries = this.#number(batch.map((p) => p.draft));
          await this.#backend.append(entries);
          this.#newest = entries[entries.length - 1];
          this.#hooks.onBatch?.(this, entries.length);
          this.#notify(entries);
          batch.forEach((p, i) => p.resolve({ entry: entries[i]!, existing: false }));
        } catch (error) {
          this.#tailUncertain = true;
          const wrapped = error instanceof LedgerError
            ? error
            : new LedgerError("unavailable", "Ledger append failed", { cause: error });
          for (const p of batch) p.reject(wrapped);
        }
      }
    } finally {
      this.#committing = false;
    }
  }

  /**
   * Redacts the record `seq`: commits a redaction entry, then deletes the
   * record's payload. Resolves `{ redaction }` when this call redacted it,
   * `{ already: true }` when it was redacted before. Throws
   * `LedgerError("not_found")` for no such record and `TypeError` when the
   * target is itself a redaction.
   */
  redact(seq: number, sender: string | undefined): Promise<RedactOutcome> {
    // Serialised per track so two concurrent DELETEs of one group commit one redaction.
    const run = this.#redactions.then(() => this.#redactNow(seq, sender));
    this.#redactions = run.then(() => undefined, () => undefined);
    return run;
  }

  // The storage numbers the batch; others' commits in between are read before ours are told.
  async #commitShared(batch: readonly Pending[]): Promise<void> {
    const outcomes = await this.#backend.commit!(batch.map((p) => p.draft), this.#wallclock());
    const fresh = outcomes.filter((o) => !o.existing).map((o) => o.entry);
    this.#advance(fresh[fresh.length - 1]);
    if (fresh.length > 0) {
      this.#hooks.onBatch?.(this, fresh.length);
      this.#follower.own(fresh);
    }
    batch.forEach((p, i) => p.resolve(outcomes[i]!));
  }

  #advance(entry: LedgerEntry | undefined): void {
    if (!entry || entry.seq <= (this.#newest?.seq ?? -1)) return;
    this.#newest = entry;
    if (entry.wallclock > this.#lastWallclock) this.#lastWallclock = entry.wallclock;
  }

  // Listeners hear of entries from the follower, which keeps sequence order.
  #told(entries: readonly LedgerEntry[]): void {
    this.#advance(entries[entries.length - 1]);
    this.#onCommit?.(this, entries);
  }

  async #redactNow(seq: number, sender: string | undefined): Promise<RedactOutcome> {
    if (this.#backend.redactOnce) {
      const result = await this.#backend.redactOnce(seq, sender, this.#wallclock());
      if ("already" in result) return { already: true };
      this.#advance(result.redaction);
      this.#hooks.onBatch?.(this, 1);
      this.#follower.own([result.redaction]);
      return { redaction: result.redaction };
    }
    const target = await this.#backend.get(seq);
    if (!target) throw new LedgerError("not_found", `No group ${seq} in this track`);
    if (target.redacts !== undefined) {
      throw new TypeError("The group is itself a redaction and cannot be redacted");
    }
    if (target.redacted) return { already: true };
    // A redaction committed earlier whose erasure failed (backend away): finish that one
    // instead of committing a second redaction of the same group.
    const pending = this.#erasing.get(seq);
    if (pending) {
      await this.#backend.erasePayload(seq);
      this.#erasing.delete(seq);
      return { redaction: pending };
    }
    const draft: EntryDraft = sender === undefined
      ? { redacts: entryGroup(target) }
      : { sender, redacts: entryGroup(target) };
    const redaction = await this.append(draft);
    this.#erasing.set(seq, redaction);
    await this.#backend.erasePayload(seq);
    this.#erasing.delete(seq);
    return { redaction };
  }

  /**
   * After a failed or timed-out commit, reads where the track really ends. A
   * commit given up on may have landed after all (its answer was lost, or
   * came after the deadline): its entries are durable, so they are published
   * now, in order, before anything newer is numbered.
   */
  async #settleTail(): Promise<void> {
    const known = this.#newest;
    const actual = await this.#backend.latest();
    if (actual && actual.seq > (known?.seq ?? -1)) {
      const landed = await this.#backend.readAfter(known?.seq, actual.seq - (known?.seq ?? -1));
      if (landed.length > 0) this.#notify(landed);
      if (actual.wallclock > this.#lastWallclock) this.#lastWallclock = actual.wallclock;
    }
    this.#newest = actual;
    this.#tailUncertain = false;
  }

  #notify(entries: readonly LedgerEntry[]): void {
    this.#follower.own(entries);
  }

  // Wallclock never goes backwards within a track, even if the system clock does.
  #wallclock(): bigint {
    let wallclock = this.#clock();
    if (wallclock < this.#lastWallclock) wallclock = this.#lastWallclock;
    this.#lastWallclock = wallclock;
    return wallclock;
  }

  #number(drafts: readonly EntryDraft[]): LedgerEntry[] {
    let seq = this.#newest ? this.#newest.seq + 1 : 0;
    const wallclock = this.#wallclock();
    return drafts.map((draft) => {
      const entry: LedgerEntry = { ...draft, epoch: CURRENT_EPOCH, seq: seq++, wallclock };
      return entry;
    });
  }
}
