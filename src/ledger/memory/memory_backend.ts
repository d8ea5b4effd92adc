import type { LedgerBackend, TrackBackend } from "../backend.ts";
import type { LedgerEntry } from "../entry.ts";
import { trackKey, type TrackPath } from "../../record/mod.ts";

/** Keeps every entry in process memory; everything is lost at exit. */
export class MemoryBackend implements LedgerBackend {
  /** Backend name. */
  readonly name = "memory";
  readonly #tracks = new Map<string, { path: TrackPath; track: MemoryTrack }>();

  /** Lists tracks in creation order. */
  listTracks(): Promise<TrackPath[]> {
    return Promise.resolve([...this.#tracks.values()].map((t) => t.path));
  }

  /** Opens, and with `create` makes, a track. */
  openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined> {
    const key = trackKey(path);
    let found = this.#tracks.get(key);
    if (!found && create) {
      found = { path, track: new MemoryTrack() };
      this.#tracks.set(key, found);
    }
    return Promise.resolve(found?.track);
  }

  /** Nothing to release. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

class MemoryTrack implements TrackBackend {
  // Ascending by seq. Retention removes from the oldest end and compaction from the
  // middle, so positions are found by binary search, not by index.
  #entries: LedgerEntry[] = [];

  // The index of the first entry with seq >= `seq`.
  #lowerBound(seq: number): number {
    let lo = 0;
    let hi = this.#entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#entries[mid]!.seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  get #end(): number {
    const last = this.#entries[this.#entries.length - 1];
    return last ? last.seq + 1 : 0;
  }

  append(entries: readonly LedgerEntry[]): Promise<void> {
    for (const entry of entries) {
      if (entry.seq !== this.#end) {
        return Promise.reject(new RangeError(`Append out of order: seq ${entry.seq}`));
      }
      this.#entries.push(entry);
    }
    return Promise.resolve();
  }

  latest(): Promise<LedgerEntry | undefined> {
    return Promise.resolve(this.#entries[this.#entries.length - 1]);
  }

  readBefore(before: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const end = this.#lowerBound(before ?? this.#end);
    const start = Math.max(0, end - Math.max(0, limit));
    return Promise.resolve(this.#entries.slice(start, end).reverse());
  }

  readAfter(after: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const start = after === undefined ? 0 : this.#lowerBound(after + 1);
    return Promise.resolve(this.#entries.slice(start, start + Math.max(0, limit)));
  }

  get(seq: number): Promise<LedgerEntry | undefined> {
    if (!Number.isInteger(seq)) return Promise.resolve(undefined);
    const entry = this.#entries[this.#lowerBound(seq)];
    return Promise.resolve(entry?.seq === seq ? entry : undefined);
  }

  erasePayload(seq: number): Promise<void> {
    const index = this.#lowerBound(seq);
    const entry = this.#entries[index];
    if (entry?.seq === seq) {
      const { payload: _payload, bytes: _bytes, ...rest } = entry;
      this.#entries[index] = { ...rest, redacted: true };
    }
    return Promise.resolve();
  }

  first(): Promise<number> {
    return Promise.resolve(this.#entries[0]?.seq ?? 0);
  }

  trim(before: number): Promise<number> {
    // The newest entry always stays: it carries the track's numbering and seal.
    const drop = Math.min(this.#lowerBound(before), this.#entries.length - 1);
    if (drop > 0) this.#entries = this.#entries.slice(drop);
    return this.first();
  }

  remove(seqs: readonly number[]): Promise<number> {
    const last = this.#entries.length - 1;
    const goes = new Set(seqs);
    const before = this.#entries.length;
    // The oldest and the newest stay: they mark where the track starts and ends.
    this.#entries = this.#entries.filter((e, i) => i === 0 || i === last || !goes.has(e.seq));
    return Promise.resolve(before - this.#entries.length);
  }
}
