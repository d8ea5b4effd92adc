import type { CachedGroup } from "./cached_group.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";

/**
 * Reads one group a cursor missed; undefined when there is none. Rejects
 * when reading failed. A group read from elsewhere is stamped as written at
 * `writtenAt` (when the producer took it is not known; it was no later).
 */
export type GapFetch = (
  sequence: number,
  signal: AbortSignal,
  writtenAt: number,
) => Promise<CachedGroup | undefined>;

/** Most groups a {@linkcode GapReader} reads ahead of its cursor. */
export const GAP_READ_AHEAD = 64;

/**
 * A failed read is tried again after this many ms: a route coming back, a
 * storage hiccup. The cursor's lag bound ends the trying (it skips ahead).
 */
export const GAP_RETRY_MS = 200;

/** What {@linkcode GapReader.take} found for the next sequence. */
export type GapRead = CachedGroup | "none" | "reading";

interface Slot {
  state: "reading" | "read";
  group: CachedGroup | undefined;
}

/**
 * The groups `[from, to)` that a cursor of a flow-controlled track fell
 * behind the producer's cache on (or a list of sequences, see
 * {@linkcode GapReader.of}), read back from where the producer reads
 * missing groups (the funnel's ledger, a relay's upstream), in order. At most {@linkcode GAP_READ_AHEAD} reads are under way or held at
 * once, so a cursor far behind costs a bounded amount of memory; `wake` is
 * called whenever a read completes.
 */
export class GapReader {
  readonly #fetch: GapFetch;
  readonly #wake: () => void;
  readonly #end: number;
  // The sequence at position `i` of what is read (positions count from 0).
  readonly #at: (i: number) => number;
  readonly #abort = new AbortController();
  // Slots for the positions #next, #next + 1, ... up to #issued - 1.
  readonly #slots: Slot[] = [];
  #next = 0;
  #issued = 0;

  readonly #writtenAt: number;
  readonly #timers: Timers;

  /**
   * Starts reading `[from, to)`, written no later than `writtenAt` (retries on
   * `timers`); `at` maps a position to its sequence (default `from + i`).
   */
  constructor(
    from: number,
    to: number,
    writtenAt: number,
    fetch: GapFetch,
    wake: () => void,
    timers: Timers = systemTimers,
    at: (i: number) => number = (i) => from + i,
  ) {
    this.#timers = timers;
    this.#writtenAt = writtenAt;
    this.#end = Math.max(0, to - from);
    this.#at = at;
    this.#fetch = fetch;
    this.#wake = wake;
    this.#fill();
  }

  /**
   * Starts reading the groups of `sequences`, in the order given (late groups
   * a cursor's cache dropped before it took them: they are not consecutive).
   */
  static of(
    sequences: readonly number[],
    writtenAt: number,
    fetch: GapFetch,
    wake: () => void,
    timers: Timers | undefined = systemTimers,
  ): GapReader {
    return new GapReader(
      0,
      sequences.length,
      writtenAt,
      fetch,
      wake,
      timers ?? systemTimers,
      (i) => sequences[i]!,
    );
  }

  /** Sequences not taken yet. */
  get remaining(): number {
    return this.#end - this.#next;
  }

  /**
   * The next sequence's group, "none" when there is no such group, or
   * "reading" when it is not read yet (then `wake` is called once it is).
   * A read that fails is tried again until {@linkcode close}.
   */
  take(): GapRead {
    const slot = this.#slots[0];
    if (!slot || slot.state === "reading") return "reading";
    this.#slots.shift();
    this.#next++;
    this.#fill();
    return slot.group ?? "none";
  }

  /** Takes `group`, written meanwhile, for the next sequence instead of waiting for its read. */
  skip(group: CachedGroup): CachedGroup {
    this.#slots.shift();
    this.#next++;
    this.#fill();
    return group;
  }

  /** Stops the reads under way. */
  close(): void {
    this.#abort.abort();
  }

  #fill(): void {
    while (this.#issued < this.#end && this.#slots.length < GAP_READ_AHEAD) {
      const slot: Slot = { state: "reading", group: undefined };
      this.#slots.push(slot);
      this.#read(slot, this.#at(this.#issued++));
    }
  }

  #read(slot: Slot, sequence: number): void {
    const signal = this.#abort.signal;
    this.#fetch(sequence, signal, this.#writtenAt).then(
      (group) => {
        slot.state = "read";
        slot.group = group;
        if (!signal.aborted) this.#wake();
      },
      () => {
        if (signal.aborted) return;
        this.#timers.setTimeout(() => {
          if (!signal.aborted) this.#read(slot, sequence);
        }, GAP_RETRY_MS);
      },
    );
  }
}
