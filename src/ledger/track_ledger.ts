import { admitBatch, sealAfter } from "./admission.ts";
import type { CommitGate, CommitOutcome, DraftOutcome, TrackBackend } from "./backend.ts";
import type { CommitFeed } from "./commit_feed.ts";
import { CommitFollower } from "./commit_follower.ts";
import { type EntryDraft, entryGroup, type LedgerEntry } from "./entry.ts";
import { type EntryRange, entryStream, type EntryStreamOptions } from "./entry_stream.ts";
import { CommitRefused, LedgerError } from "./errors.ts";
import type { TrackPath } from "../record/mod.ts";

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

/** Where a track's commits go: the ledger's {@link CommitFeed}. */
export type TrackCommits = Pick<CommitFeed, "committed" | "followFailed">;

interface Pending {
  readonly draft: EntryDraft;
  readonly gate: CommitGate | undefined;
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
 *
 * A draft committed through a {@link CommitGate} is checked by the gate
 * where the commit order is decided; a sealed track refuses other drafts
 * ({@link EntryDraft.seal}). Over a single-writer backend both happen here,
 * in the commit loop; over a shared one, in the backend's transaction.
 */
export class TrackLedger {
  /** The track this ledger stores. */
  readonly path: TrackPath;
  readonly #backend: TrackBackend;
  readonly #clock: NanoClock;
  readonly #maxBatch: number;
  readonly #commits: TrackCommits | undefined;
  #follower!: CommitFollower;
  #newest: LedgerEntry | undefined;
  #queue: Pending[] = [];
  #committing = false;
  #lastWallclock = 0n;
  /** Single-writer backends: the track's seal, as its newest entry left it. */
  #seal: string | undefined;
  #redactions: Promise<void> = Promise.resolve();
  #redacting = 0;
  /** Set by the {@link Ledger} while this ledger is out of its open-track map (see there). */
  retired = false;
  /** Redactions committed whose payload erasure has not succeeded yet, by redacted seq. */
  readonly #erasing = new Map<number, LedgerEntry>();
  // When a batch fails we no longer know what reached storage; re-read the tail first.
  #tailUncertain = false;

  private constructor(
    path: TrackPath,
    backend: TrackBackend,
    clock: NanoClock,
    maxBatch: number,
    commits: TrackCommits | undefined,
  ) {
    this.path = path;
    this.#commits = commits;
    this.#backend = backend;
    this.#clock = clock;
    this.#maxBatch = maxBatch;
  }

  /**
   * Opens a ledger over a track backend, reading its newest entry once; its
   * commits, whoever made them, go to `commits` in sequence order.
   */
  static async open(
    path: TrackPath,
    backend: TrackBackend,
    clock: NanoClock,
    maxBatch = 1024,
    commits?: TrackCommits,
    onStuckRead?: () => void,
  ): Promise<TrackLedger> {
    const ledger = new TrackLedger(path, backend, clock, maxBatch, commits);
    ledger.#newest = await backend.latest();
    ledger.#lastWallclock = ledger.#newest?.wallclock ?? 0n;
    // A shared backend keeps the seal itself; a single writer reads it from its newest entries.
    if (!backend.commit) ledger.#seal = await sealOf(backend, ledger.#newest);
    ledger.#follower = new CommitFollower({
      read: (after, limit) => backend.readAfter(after, limit),
      tell: (entries, learned) => ledger.#told(entries, learned),
      told: ledger.#newest?.seq ?? -1,
      ...(commits ? { onError: (error: unknown) => commits.followFailed(error) } : {}),
      ...(onStuckRead ? { onStuck: onStuckRead } : {}),
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

  /**
   * True when nothing is in flight here: no commit queued or running, no
   * redaction or payload erasure pending. An idle ledger can leave the
   * {@link Ledger}'s open-track map without losing anything.
   */
  get idle(): boolean {
    return this.#queue.length === 0 && !this.#committing && this.#redacting === 0 &&
      this.#erasing.size === 0;
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

  /**
   * The oldest sequence still stored: records below it were removed by
   * retention and are gone (0 while none was).
   */
  first(): Promise<number> {
    return this.#backend.first();
  }

  /**
   * Retention: removes the records below `before` (never the newest), in
   * the backend's whole storage units, so perhaps fewer. Resolves with
   * {@link first} after it.
   */
  async trim(before: number): Promise<number> {
    const newest = this.#newest?.seq ?? -1;
    return await this.#backend.trim(Math.min(before, newest));
  }

  /** Commits one entry; resolves with it once it is durable. */
  async append(draft: EntryDraft): Promise<LedgerEntry> {
    return (await this.commit(draft)).entry;
  }

  /**
   * Commits one entry; resolves once it is durable. On a shared backend a
   * draft whose sender and Idempotency-Key another process stored already
   * resolves with that entry, marked `existing`, and stores nothing. With
   * `gate`, the gate admits or refuses it where the commit order is decided
   * (drafts of one gate are batched together). A draft the gate or the
   * track's seal refuses rejects with {@link CommitRefused}, after its batch
   * is durable.
   */
  commit(draft: EntryDraft, gate?: CommitGate): Promise<CommitOutcome> {
    if (draft.seal !== undefined && draft.idempotencyKey !== undefined) {
      return Promise.reject(new TypeError("A draft that sets a seal carries no Idempotency-Key"));
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ draft, gate, resolve, reject });
      if (!this.#committing) void this.#drain();
    });
  }

  // The next batch: drafts in queue order, as many as allowed, all of one gate (or none).
  #take(): Pending[] {
    const gate = this.#queue[0]?.gate;
    let n = 0;
    while (n < this.#queue.length && n < this.#maxBatch && this.#queue[n]!.gate === gate) n++;
    return this.#queue.splice(0, n);
  }

  async #drain(): Promise<void> {
    this.#committing = true;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#take();
        try {
          if (this.#backend.commit) {
            await this.#commitShared(batch);
            continue;
          }
          if (this.#tailUncertain) await this.#settleTail();
          const gate = batch[0]!.gate;
          const check = gate?.open(await this.#since(gate.seen));
          const decided = admitBatch(
            batch.map((p) => p.draft),
            this.#newest ? this.#newest.seq + 1 : 0,
            this.#wallclock(),
            this.#seal,
            check,
          );
          const entries = decided.entries;
          if (entries.length > 0) {
            await this.#backend.append(entries);
            this.#newest = entries[entries.length - 1];
            this.#seal = decided.seal;
          }
          gate?.stored(entries);
          if (entries.length > 0) this.#notify(entries);
          settle(batch, decided.outcomes);
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
   * `LedgerError("not_found")` for no such record and
   * `LedgerError("invalid_request")` when the target is itself a redaction.
   */
  redact(seq: number, sender: string | undefined): Promise<RedactOutcome> {
    // Serialised per track so two concurrent DELETEs of one group commit one redaction.
    this.#redacting++;
    const run = this.#redactions.then(() => this.#redactNow(seq, sender));
    this.#redactions = run.then(() => void this.#redacting--, () => void this.#redacting--);
    return run;
  }

  // The storage numbers the batch; others' commits in between are read before ours are told.
  async #commitShared(batch: readonly Pending[]): Promise<void> {
    const gate = batch[0]!.gate;
    const outcomes = await this.#backend.commit!(
      batch.map((p) => p.draft),
      this.#wallclock(),
      gate,
    );
    const fresh = outcomes.flatMap((o) => "entry" in o && !o.existing ? [o.entry] : []);
    this.#advance(fresh[fresh.length - 1]);
    gate?.stored(fresh);
    if (fresh.length > 0) this.#follower.own(fresh);
    settle(batch, outcomes);
  }

  // Single writer: the entries a gate has not seen yet, all committed here.
  async #since(after: number): Promise<LedgerEntry[]> {
    const newest = this.#newest?.seq ?? -1;
    const out: LedgerEntry[] = [];
    while (after < newest) {
      const page = await this.#backend.readAfter(after, Math.min(1024, newest - after));
      if (page.length === 0) break;
      out.push(...page);
      after = page[page.length - 1]!.seq;
    }
    return out;
  }

  #advance(entry: LedgerEntry | undefined): void {
    if (!entry || entry.seq <= (this.#newest?.seq ?? -1)) return;
    this.#newest = entry;
    if (entry.wallclock > this.#lastWallclock) this.#lastWallclock = entry.wallclock;
  }

  // The feed hears of entries from the follower, which keeps sequence order.
  #told(entries: readonly LedgerEntry[], learned: number): void {
    this.#advance(entries[entries.length - 1]);
    this.#commits?.committed(this.path, entries, learned);
  }

  async #redactNow(seq: number, sender: string | undefined): Promise<RedactOutcome> {
    if (this.#backend.redactOnce) {
      const result = await this.#backend.redactOnce(seq, sender, this.#wallclock());
      if ("already" in result) return { already: true };
      this.#advance(result.redaction);
      this.#follower.own([result.redaction]);
      return { redaction: result.redaction };
    }
    const target = await this.#backend.get(seq);
    if (!target) throw new LedgerError("not_found", `No group ${seq} in this track`);
    if (target.redacts !== undefined) {
      throw new LedgerError("invalid_request", "The group is a redaction; it cannot be redacted");
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
      this.#seal = sealAfter(this.#seal, landed);
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
}

// Each committer hears its draft's outcome: stored (or stored before), or refused.
function settle(batch: readonly Pending[], outcomes: readonly DraftOutcome[]): void {
  batch.forEach((p, i) => {
    const outcome = outcomes[i]!;
    if ("refused" in outcome) p.reject(new CommitRefused(outcome.refused));
    else p.resolve(outcome);
  });
}

/** The seal a single writer's track is under: its newest entry that is not a redaction says. */
async function sealOf(
  backend: TrackBackend,
  newest: LedgerEntry | undefined,
): Promise<string | undefined> {
  let entry = newest;
  while (entry && entry.redacts !== undefined) {
    const page = await backend.readBefore(entry.seq, 64);
    entry = page.find((e) => e.redacts === undefined) ?? page[page.length - 1];
  }
  return entry?.seal;
}
