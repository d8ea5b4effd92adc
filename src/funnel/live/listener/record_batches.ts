import type { LedgerEntry } from "../../../ledger/mod.ts";
import type { TrackPath } from "../../../path/mod.ts";
import type { RecordItem } from "./worker_messages.ts";

/**
 * Committed records on their way to the listener's worker, in commit order.
 * Consecutive commits of one track travel as one item, so its path is
 * copied once per batch. Bounded by the worker host, which holds its
 * commit feed reader back past `LISTENER_BACKLOG` entries not yet applied.
 */
export class RecordBatches {
  #queued: RecordItem[] = [];
  #lastPath: TrackPath | undefined;
  #lastEntries: LedgerEntry[] | undefined;

  /** Whether anything waits to be sent. */
  get empty(): boolean {
    return this.#queued.length === 0;
  }

  /** Queues a track's creation (with its newest entry) or its newly committed entries. */
  add(path: TrackPath, created: boolean, entries: readonly LedgerEntry[]): void {
    if (!created && path === this.#lastPath && this.#lastEntries && !this.empty) {
      for (const entry of entries) this.#lastEntries.push(entry);
      return;
    }
    const copy = [...entries];
    this.#queued.push({
      track: { broadcast: path.broadcast, track: path.track },
      created,
      entries: copy,
    });
    this.#lastPath = created ? undefined : path;
    this.#lastEntries = created ? undefined : copy;
  }

  /** Everything queued, oldest first; the queue starts empty again. */
  take(): RecordItem[] {
    const items = this.#queued;
    this.#queued = [];
    this.#lastPath = undefined;
    this.#lastEntries = undefined;
    return items;
  }
}
