/**
 * The bytes a session holds of groups it is still receiving, under one limit,
 * so a peer cannot make it hold many large half-sent groups at once.
 *
 * A frame that does not fit waits for room rather than failing its group:
 * a publisher sending several large groups at once (a subscriber that fell
 * behind is sent them together) is slowed by QUIC flow control, and loses
 * nothing. Groups already holding bytes are let in before new ones, so
 * groups finish. Three rules keep a hostile publisher from turning the wait
 * into a standstill or a queue without end:
 * - when every byte held belongs to a waiting group, nothing could ever be
 *   released: the newest waiting group is refused;
 * - while groups wait, a group that holds bytes and received less than
 *   `MIN_PROGRESS` in `STALL_MS` is reset (a publisher that fills the
 *   budget and goes quiet, or trickles, would otherwise starve every other
 *   track of the session, a relay peer's included);
 * - at most `MAX_WAITING` groups wait; past that a group is refused, as
 *   every group past the budget was before waiting existed.
 */
import { DecodeError } from "../../wire/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";

/**
 * The largest frame a session takes by default. A funnel record carrying a
 * Durable Streams append of 16 MiB is a frame of about 21.4 MiB (base64 in
 * JSON), and every hop (relay, FETCH repair, client) must take it.
 */
export const DEFAULT_MAX_FRAME = 32 << 20;
/** The largest group a session takes by default. */
export const DEFAULT_MAX_GROUP = 64 << 20;
/** The bytes of groups still arriving a session holds at once by default. */
export const DEFAULT_MAX_BUFFERED = 128 << 20;
/** The interval of the stall check while groups wait for room, ms. */
export const STALL_MS = 5_000;
/**
 * What a group holding bytes must receive per STALL_MS while others wait for
 * room (16 KiB, about 3 KB/s), or it is reset: a publisher cannot keep the
 * budget with an empty frame now and then.
 */
export const MIN_PROGRESS = 16 << 10;
/** Groups of one session waiting for room at once. */
export const MAX_WAITING = 64;
/**
 * What a frame counts for against the group and receive limits besides its
 * payload: a frame held costs about that much memory whatever its size (its
 * view and its place in the group's list; 483 MiB of heap for 4 million
 * one-byte frames, 8 MiB sent). Counted as payload alone, a publisher of
 * one-byte or empty frames made a session hold gigabytes within the limits,
 * until the process ran out of memory.
 */
export const FRAME_COST = 128;

/** A group being received, as the budget sees it. */
export interface BudgetHolder {
  /** Bytes it took from the budget (the budget adds to it, and clears it on release). */
  held: number;
  /** Bytes its stream delivered so far: unchanged between two checks means it stalled. */
  progress(): number;
  /** Resets its stream: it then fails, and its reader releases what it held. */
  reset(): void;
}

interface Waiter {
  readonly size: number;
  readonly holder: BudgetHolder;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

/** One session's budget for partially received groups. */
export class ReceiveBudget {
  readonly #limit: number;
  readonly #timers: Timers;
  /** Bytes held now. */
  #held = 0;
  /** Bytes held by groups that wait for room themselves. */
  #heldByWaiting = 0;
  /** Groups holding bytes, with what their stream had delivered at the last check (-1: none yet). */
  readonly #holders = new Map<BudgetHolder, number>();
  /** Waiting groups that hold bytes (served first), then new groups. */
  readonly #continuing: Waiter[] = [];
  readonly #starting: Waiter[] = [];
  #check: unknown;
  #closed: Error | undefined;
  /** Groups reset for holding bytes while receiving too little (see STALL_MS). */
  stalledResets = 0;

  /** A budget of `limit` bytes; `timers` runs the stall check. */
  constructor(limit: number, timers: Timers = systemTimers) {
    this.#limit = limit;
    this.#timers = timers;
  }

  /** Bytes held now. */
  get held(): number {
    return this.#held;
  }

  /** Groups waiting for room now. */
  get waiting(): number {
    return this.#continuing.length + this.#starting.length;
  }

  /**
   * Takes `size` bytes for `holder` (added to its `held`): at once when they
   * fit, else once other groups release enough. Throws `too_large` when they
   * never can, or too many groups wait already.
   */
  take(size: number, holder: BudgetHolder): Promise<void> | void {
    if (this.#closed) throw this.#closed;
    if (size > this.#limit) {
      throw new DecodeError("too_large", `Cannot buffer a frame of ${size} bytes`);
    }
    const continuing = holder.held > 0;
    const ahead = continuing ? this.#continuing.length : this.waiting;
    if (ahead === 0 && this.#held + size <= this.#limit) {
      this.#grant(holder, size);
      return;
    }
    if (this.waiting >= MAX_WAITING) {
      throw new DecodeError("too_large", "Cannot buffer more partially received groups");
    }
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    (continuing ? this.#continuing : this.#starting).push({ size, holder, resolve, reject });
    this.#heldByWaiting += holder.held;
    this.#refuseIfStuck();
    this.#armCheck();
    return promise;
  }

  /** Gives back everything `holder` held (its stream ended or failed). */
  release(holder: BudgetHolder): void {
    this.#held -= holder.held;
    holder.held = 0;
    this.#holders.delete(holder);
    this.#admitWaiting();
  }

  /** Refuses every waiting group and any later take (the session ended). */
  close(reason: Error): void {
    this.#closed = reason;
    for (const w of [...this.#continuing.splice(0), ...this.#starting.splice(0)]) w.reject(reason);
    this.#heldByWaiting = 0;
    this.#holders.clear();
    if (this.#check !== undefined) this.#timers.clearTimeout(this.#check);
    this.#check = undefined;
  }

  #grant(holder: BudgetHolder, size: number): void {
    this.#held += size;
    holder.held += size;
    // Seen by no check yet: the first check only records its progress, so a group is reset
    // after STALL_MS at the least without a byte.
    if (!this.#holders.has(holder)) this.#holders.set(holder, -1);
  }

  #admitWaiting(): void {
    admitting: for (const queue of [this.#continuing, this.#starting]) {
      while (queue.length > 0) {
        const next = queue[0]!;
        if (this.#held + next.size > this.#limit) break admitting;
        queue.shift();
        this.#heldByWaiting -= next.holder.held;
        this.#grant(next.holder, next.size);
        next.resolve();
      }
    }
    this.#refuseIfStuck();
  }

  // When every byte held belongs to a waiting group and the next one still does not fit,
  // nothing will ever be released: the newest continuing group is refused (its stream
  // fails, and its release lets the others on).
  #refuseIfStuck(): void {
    const head = this.#continuing[0] ?? this.#starting[0];
    if (!head || this.#held === 0 || this.#heldByWaiting !== this.#held) return;
    if (this.#held + head.size <= this.#limit) return;
    const stuck = this.#continuing.pop()!;
    this.#heldByWaiting -= stuck.holder.held;
    stuck.reject(new DecodeError("too_large", "Cannot buffer more partially received groups"));
  }

  // One timer per budget, only while groups wait.
  #armCheck(): void {
    if (this.#check !== undefined) return;
    this.#check = this.#timers.setTimeout(this.#checkStalls, STALL_MS);
  }

  // Resets the groups that hold bytes, do not wait themselves, and received less than
  // MIN_PROGRESS since the last check; their release lets the waiting groups on.
  readonly #checkStalls = (): void => {
    this.#check = undefined;
    if (this.waiting === 0) return;
    const waitingHolders = new Set([...this.#continuing].map((w) => w.holder));
    for (const [holder, seen] of this.#holders) {
      const now = holder.progress();
      if (seen >= 0 && now - seen < MIN_PROGRESS && !waitingHolders.has(holder)) {
        this.stalledResets++;
        this.#holders.delete(holder);
        holder.reset();
      } else this.#holders.set(holder, now);
    }
    this.#armCheck();
  };
}
