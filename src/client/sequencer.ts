/**
 * The feed's bookkeeping: which record comes next, the live records that
 * arrived ahead of it, and whether a missing one has waited long enough to
 * be read from the ledger. Records leave strictly in ledger order, each once.
 */
import type { Positioned } from "./record.ts";

/** A place in the ledger: an epoch and a sequence in it. */
export interface LedgerPosition {
  /** Ledger epoch. */
  readonly epoch: number;
  /** Ledger sequence. */
  readonly seq: number;
}

/** Live records held while an older one is missing; later ones are left to the ledger. */
export const PENDING_MAX = 4096;

/** A missing stretch of records: `from` up to `to` (inclusive; ledger sequences). */
export interface Gap {
  /** First missing sequence. */
  readonly from: number;
  /** Last missing sequence below the next held one (or the newest seen). */
  readonly to: number;
  /** True once it has waited the reorder wait (or is known to be dropped). */
  readonly due: boolean;
  /** When it becomes due, ms on the clock. */
  readonly dueAt: number;
}

/** Orders records by ledger sequence and tracks what is missing. */
export class Sequencer {
  /** Ledger epoch of the records (from the group ids the funnel returned). */
  epoch = 1;
  /** Sequence of the last record delivered; -1 before the first. */
  cursor = -1;
  /**
   * What the last {@linkcode accept} went past without a record: the ledger
   * no longer holds it (retention, or a new epoch began). The sequence `to`
   * may be -1 when a new epoch starts with its first record.
   */
  skipped: { from: LedgerPosition; to: LedgerPosition } | undefined;
  readonly #pending = new Map<number, Positioned>();
  readonly #waitMs: number;
  readonly #now: () => number;
  #highestSeen = -1;
  #gapSince: number | undefined;

  /** `waitMs`: how long a missing record may be waited for; `now` in ms. */
  constructor(waitMs: number, now: () => number = Date.now) {
    this.#waitMs = waitMs;
    this.#now = now;
  }

  /** Sequence of the newest record known to exist (delivered or seen live). */
  get newest(): number {
    return Math.max(this.cursor, this.#highestSeen);
  }

  /** Live records held now. */
  get held(): number {
    return this.#pending.size;
  }

  /**
   * A live record of sequence `seq` arrived; `read` parses it (undefined
   * when its frame is unreadable: the ledger then supplies it). Returns
   * false for one already delivered or held.
   */
  offer(seq: number, read: () => Positioned | undefined): boolean {
    if (seq <= this.cursor || this.#pending.has(seq)) return false;
    if (seq > this.#highestSeen) this.#highestSeen = seq;
    if (this.#pending.size >= PENDING_MAX) return false;
    const p = read();
    if (p) this.#pending.set(seq, p);
    return p !== undefined;
  }

  /** The next record if it is held, taking it (and moving the cursor). */
  takeNext(): Positioned | undefined {
    const p = this.#pending.get(this.cursor + 1);
    if (!p) return undefined;
    this.#pending.delete(p.seq);
    this.cursor = p.seq;
    this.#gapSince = undefined;
    return p;
  }

  /**
   * A record read from the ledger: true when it is the next to deliver
   * (newer than the cursor), which moves the cursor past it. Records skipped
   * over are gone from the ledger, and held ones below it are dropped.
   */
  accept(p: Positioned): boolean {
    if (p.epoch < this.epoch || (p.epoch === this.epoch && p.seq <= this.cursor)) return false;
    this.skipped = p.epoch !== this.epoch
      ? {
        from: { epoch: this.epoch, seq: this.cursor + 1 },
        to: { epoch: p.epoch, seq: p.seq - 1 },
      }
      : p.seq > this.cursor + 1
      ? { from: { epoch: p.epoch, seq: this.cursor + 1 }, to: { epoch: p.epoch, seq: p.seq - 1 } }
      : undefined;
    if (p.epoch !== this.epoch) {
      // A new epoch starts its sequences again: nothing held belongs to it.
      this.epoch = p.epoch;
      this.#pending.clear();
      this.#highestSeen = -1;
    }
    for (let s = this.cursor + 1; s <= p.seq; s++) this.#pending.delete(s);
    this.cursor = p.seq;
    this.#gapSince = undefined;
    return true;
  }

  /**
   * The ledger said records from the cursor on were removed and the track
   * now starts at `first`: the cursor moves to just before it, and what it
   * went past is {@linkcode skipped} (held records below it go too).
   */
  skipTo(first: LedgerPosition): void {
    if (first.epoch !== this.epoch || first.seq <= this.cursor + 1) {
      this.skipped = undefined;
      return;
    }
    this.skipped = {
      from: { epoch: this.epoch, seq: this.cursor + 1 },
      to: { epoch: this.epoch, seq: first.seq - 1 },
    };
    for (let s = this.cursor + 1; s < first.seq; s++) this.#pending.delete(s);
    this.cursor = first.seq - 1;
    this.#gapSince = undefined;
  }

  /** The held record with the lowest sequence, if any. */
  lowestHeld(): number | undefined {
    let low: number | undefined;
    for (const s of this.#pending.keys()) if (low === undefined || s < low) low = s;
    return low;
  }

  /**
   * What is missing now, if anything: newer records exist (held or seen)
   * while the next is not held. `dropped` tells whether the publisher
   * declared a sequence dropped (then there is nothing to wait for).
   */
  gap(dropped: (seq: number) => boolean = () => false): Gap | undefined {
    const next = this.cursor + 1;
    if (this.#highestSeen < next || this.#pending.has(next)) {
      this.#gapSince = undefined;
      return undefined;
    }
    const now = this.#now();
    this.#gapSince ??= now;
    const low = this.lowestHeld();
    const to = (low ?? this.#highestSeen + 1) - 1;
    const dueAt = this.#gapSince + this.#waitMs;
    return { from: next, to, due: now >= dueAt || dropped(next), dueAt };
  }
}
