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
  // Index = seq, since entries are numbered consecutively from 0.
  readonly #entries: LedgerEntry[] = [];

  append(entries: readonly LedgerEntry[]): Promise<void> {
    for (const entry of entries) {
      if (entry.seq !== this.#entries.length) {
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
    const end = Math.min(before ?? this.#entries.length, this.#entries.length);
    const start = Math.max(0, end - limit);
    return Promise.resolve(this.#entries.slice(start, end).reverse());
  }

  readAfter(after: number | undefined, limit: number): Promise<LedgerEntry[]> {
    const start = Math.max(0, after === undefined ? 0 : after + 1);
    return Promise.resolve(this.#entries.slice(start, start + Math.max(0, limit)));
  }

  get(seq: number): Promise<LedgerEntry | undefined> {
    return Promise.resolve(Number.isInteger(seq) ? this.#entries[seq] : undefined);
  }

  erasePayload(seq: number): Promise<void> {
    const entry = this.#entries[seq];
    if (entry) {
      const { payload: _payload, bytes: _bytes, ...rest } = entry;
      this.#entries[seq] = { ...rest, redacted: true };
    }
    return Promise.resolve();
  }
}
