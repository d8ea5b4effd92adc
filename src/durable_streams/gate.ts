import type {
  CommitGate,
  CommitOutcome,
  EntryDraft,
  LedgerEntry,
  TrackLedger,
} from "../ledger/mod.ts";
import { commitMs, type Recovered } from "./load_state.ts";
import { decide, type Intent, type Refused } from "./rules.ts";
import { foldEntry, type StreamHead } from "./stream_head.ts";

const AGAIN: Refused = { kind: "again" };

/** Reads recorded for a sliding TTL are at least this far apart, ms (readers write no faster). */
export const RECORD_FLOOR_MS = 1000;

/**
 * How often a read under a sliding TTL of `ttlSeconds` is recorded at most:
 * every half TTL, and never more than once a second per stream and funnel.
 */
export function recordEveryMs(ttlSeconds: number): number {
  return Math.max(ttlSeconds * 500, RECORD_FLOOR_MS);
}

/**
 * The writer state of one stream's track, and the gate its writes commit
 * through: the protocol's checks (closure, producers, `Stream-Seq`, the
 * stream existing) run where the ledger decides the track's commit order,
 * against every entry committed before, by this process or another (on
 * PostgreSQL, inside the batch's transaction under the track's row lock).
 * So a check and the append it admits are one step on every funnel.
 *
 * The committed state moves on by folding committed entries, each once and
 * in sequence order, whichever way they arrive: the ledger's commit
 * notices, the entries a batch's transaction finds the gate has not seen,
 * a batch of its own once durable, or a read of the track.
 */
export class StreamGate implements CommitGate {
  readonly #now: () => number;
  readonly #intents = new WeakMap<EntryDraft, Intent>();
  #seen: number;
  #head: StreamHead | undefined;
  #lastAccess: number;
  #recorded: number;

  /**
   * A gate starting from the state read back from the track: the last
   * access is the newest entry's commit time (a write, or a read recorded
   * by `StreamState.read`), so a restart and another funnel count the
   * sliding TTL from the same point.
   */
  constructor(recovered: Recovered, now: () => number) {
    this.#now = now;
    this.#seen = recovered.seen;
    this.#head = recovered.head;
    this.#recorded = recovered.written ?? now();
    this.#lastAccess = this.#recorded;
  }

  /** The newest sequence folded in. */
  get seen(): number {
    return this.#seen;
  }

  /** The stream as its committed entries leave it; undefined once deleted. */
  get head(): StreamHead | undefined {
    return this.#head;
  }

  /** Last read or write this process saw, ms, for the sliding TTL. */
  get lastAccess(): number {
    return this.#lastAccess;
  }

  /** A read or write now. */
  touch(now: number): void {
    this.#lastAccess = Math.max(this.#lastAccess, now);
  }

  /**
   * True when a read now should be recorded in the ledger for a sliding
   * TTL of `ttlSeconds`: the last access recorded (an entry's commit) is at
   * least {@link recordEveryMs} old. Claims the recording, so reads at once record once.
   */
  claimRecord(now: number, ttlSeconds: number): boolean {
    if (now - this.#recorded < recordEveryMs(ttlSeconds)) return false;
    this.#recorded = now;
    return true;
  }

  /** Commits `draft` to `track` through this gate, checked as `intent` asks. */
  commit(track: TrackLedger, draft: EntryDraft, intent: Intent): Promise<CommitOutcome> {
    this.#intents.set(draft, intent);
    return track.commit(draft, this);
  }

  /** Takes in committed entries (oldest first); those seen already, or past a gap, are skipped. */
  fold(
    entries: readonly (Pick<LedgerEntry, "seq" | "meta"> & { wallclock?: bigint })[],
  ): void {
    for (const entry of entries) {
      if (entry.seq <= this.#seen) continue;
      if (entry.seq !== this.#seen + 1) return;
      const before = this.#head;
      this.#head = foldEntry(this.#head, entry);
      // Every entry is an access another funnel or a restart also reads back.
      if (entry.wallclock !== undefined) {
        const at = commitMs(entry.wallclock);
        this.#recorded = Math.max(this.#recorded, at);
        this.#lastAccess = Math.max(this.#lastAccess, at);
      }
      // A new stream under the name: its TTL counts from its creation.
      if (this.#head && this.#head !== before) this.#lastAccess = this.#now();
      this.#seen = entry.seq;
    }
  }

  /**
   * Folds in what the track holds beyond what was folded: up to the newest
   * entry this process knows of, or with `fresh` on a shared ledger, up to
   * the newest the storage holds (one read).
   */
  async catchUp(track: TrackLedger, fresh = false): Promise<void> {
    let newest = track.newest?.seq ?? -1;
    if (fresh && track.shared) newest = Math.max(newest, (await track.backend.latest())?.seq ?? -1);
    if (newest <= this.#seen) return;
    const after = this.#seen < 0 ? undefined : this.#seen;
    for await (const entry of track.entries({ after })) {
      this.fold([entry]);
      if (entry.seq >= newest) break;
    }
  }

  /** See {@link CommitGate.open}: the protocol's rules, draft by draft, on a scratch head. */
  open(stored: readonly LedgerEntry[]): (draft: EntryDraft, seq: number) => unknown {
    this.fold(stored);
    const base = this.#seen;
    let view = this.#head;
    let scratch = false;
    let admitted = 0;
    return (draft, seq) => {
      // Every entry before this one must be in the view, or no decision is sound.
      if (seq !== base + 1 + admitted) return AGAIN;
      const intent = this.#intents.get(draft);
      const refused = intent ? decide(view, intent, seq) : undefined;
      if (refused) return refused;
      if (!scratch) (view = view?.child(), scratch = true);
      view = foldEntry(view, { seq, meta: draft.meta });
      admitted++;
      return undefined;
    };
  }

  /** See {@link CommitGate.stored}. */
  stored(entries: readonly LedgerEntry[]): void {
    this.fold(entries);
  }
}
