import type { TrackBackend } from "../backend.ts";
import { withoutPayload } from "../codec.ts";
import type { LedgerEntry } from "../entry.ts";
import { LedgerError } from "../errors.ts";
import { fsyncDir, isSystemError, replaceFile, writeAll } from "./file_io.ts";
import { indexAtOrAfter, segmentIndexOf } from "./seq_search.ts";
import { listSegments, scanTail } from "./tail_scan.ts";
import { Serial } from "../serial.ts";
import { concatBytes } from "../../wire/mod.ts";
import type { LruCache } from "../../cache/mod.ts";
import { frame, framesOf, parseSegment, segmentName } from "./segment_file.ts";

/** Parsed segments kept in memory per track for paging. */
const CACHED_SEGMENTS = 2;

/**
 * The tracks of one backend that hold a file open or segments parsed, most
 * recently used last; a track dropped from it releases both when idle.
 */
export type TrackHandles = LruCache<DirectoryTrack, true>;

/**
 * One track of the directory backend: its segment files, the tail segment
 * it appends to, and a small cache of parsed segments for paging.
 *
 * What a track knows of its files (segments, tail size, newest entry) stays
 * in memory; the tail file is opened at the first append and parsed segments
 * are kept only while the track is among the backend's most recently used
 * ({@link TrackHandles}). So open files and parsed segments are bounded by
 * that setting, not by the number of tracks.
 */
export class DirectoryTrack implements TrackBackend {
  readonly #dir: string;
  readonly #segmentBytes: number;
  readonly #handles: TrackHandles;
  readonly #serial = new Serial();
  /** First seq of every segment, ascending. */
  #segments: number[] = [];
  #tail: Deno.FsFile | undefined;
  #tailSize = 0;
  /** The tail file's current offset when known (it is the end after a successful append). */
  #tailOffset: number | undefined;
  #newest: LedgerEntry | undefined;
  readonly #cache = new Map<number, LedgerEntry[]>();
  // After a failed write the file state is unknown: reload the tail before the next operation.
  #uncertain = false;

  private constructor(dir: string, segmentBytes: number, handles: TrackHandles) {
    this.#dir = dir;
    this.#segmentBytes = segmentBytes;
    this.#handles = handles;
  }

  /**
   * Opens the track in `dir`, truncating a torn tail before anything is
   * served. Leaves no file open: the tail is opened at the first append.
   */
  static async load(
    dir: string,
    segmentBytes: number,
    handles: TrackHandles,
  ): Promise<DirectoryTrack> {
    const track = new DirectoryTrack(dir, segmentBytes, handles);
    await track.#reload();
    return track;
  }

  /**
   * Dropped from the most recently used: once the operations queued now are
   * done, closes the tail file and forgets parsed segments, unless one of
   * them used the track again.
   */
  release(): void {
    this.#serial.run(() => {
      if (!this.#handles.has(this)) this.#drop();
      return Promise.resolve();
    });
  }

  #drop(): void {
    this.#closeTail();
    this.#cache.clear();
  }

  // Marks the track most recently used: it is about to hold a file or parsed segments.
  #touch(): void {
    this.#handles.set(this, true);
  }

  /** Reads the directory and the last segment, truncating a torn tail. */
  async #reload(): Promise<void> {
    this.#closeTail();
    this.#cache.clear();
    const segments = await listSegments(this.#dir);
    this.#segments = segments;
    this.#newest = undefined;
    this.#tailSize = 0;
    const last = segments[segments.length - 1];
    if (last === undefined) {
      this.#uncertain = false;
      return;
    }
    const tail = await scanTail(`${this.#dir}/${segmentName(last)}`, last);
    this.#tailSize = tail.size;
    this.#newest = tail.newest;
    // An empty last segment (a roll that crashed before its first frame): the newest is earlier.
    for (let i = segments.length - 2; i >= 0 && !this.#newest; i--) {
      const entries = await this.#readSegment(segments[i]!);
      this.#newest = entries[entries.length - 1];
    }
    this.#uncertain = false;
  }

  #closeTail(): void {
    this.#tailOffset = undefined;
    try {
      this.#tail?.close();
    } catch {
      // Already closed.
    }
    this.#tail = undefined;
  }

  #remember(first: number, entries: LedgerEntry[]): void {
    this.#touch();
    this.#cache.delete(first);
    this.#cache.set(first, entries);
    while (this.#cache.size > CACHED_SEGMENTS) {
      this.#cache.delete(this.#cache.keys().next().value!);
    }
  }

  async #readSegment(first: number): Promise<LedgerEntry[]> {
    const cached = this.#cache.get(first);
    if (cached) {
      this.#remember(first, cached);
      return cached;
    }
    const bytes = await Deno.readFile(`${this.#dir}/${segmentName(first)}`);
    const isTail = first === this.#segments[this.#segments.length - 1];
    const parsed = parseSegment(isTail ? bytes.subarray(0, this.#tailSize) : bytes, first);
    if (!isTail && parsed.validLength !== bytes.length) {
      throw new LedgerError("corrupt", `Segment ${segmentName(first)} in ${this.#dir} is damaged`);
    }
    const entries = parsed.batches.flat();
    this.#remember(first, entries);
    return entries;
  }

  // One operation at a time; a file that cannot be opened or read (the process is out of
  // descriptors, a disk error) fails it as unavailable, which the funnel answers with 503.
  #run<T>(task: () => Promise<T>): Promise<T> {
    return this.#serial.run(task).catch((error) => {
      if (!isSystemError(error)) throw error;
      throw new LedgerError("unavailable", `Cannot use the ledger files in ${this.#dir}`, {
        cause: error,
      });
    });
  }

  #ready(): Promise<void> {
    return this.#uncertain ? this.#reload() : Promise.resolve();
  }

  append(entries: readonly LedgerEntry[]): Promise<void> {
    return this.#run(async () => {
      await this.#ready();
      const first = entries[0];
      if (!first) return;
      const expected = this.#newest ? this.#newest.seq + 1 : 0;
      if (first.seq !== expected) {
        throw new RangeError(`Append out of order: seq ${first.seq}, expected ${expected}`);
      }
      const bytes = frame(entries);
      this.#touch();
      try {
        let created = false;
        if (this.#segments.length > 0 && this.#tailSize < this.#segmentBytes) {
          this.#tail ??= await Deno.open(`${this.#dir}/${segmentName(this.#segments.at(-1)!)}`, {
            read: true,
            write: true,
          });
        } else {
          this.#closeTail();
          this.#tail = await Deno.open(`${this.#dir}/${segmentName(first.seq)}`, {
            read: true,
            write: true,
            createNew: true,
          });
          this.#segments.push(first.seq);
          this.#tailSize = 0;
          created = true;
        }
        // One fewer blocking op per batch: seek only when the offset is not already the end.
        if (this.#tailOffset !== this.#tailSize) {
          await this.#tail.seek(this.#tailSize, Deno.SeekMode.Start);
        }
        this.#tailOffset = undefined;
        await writeAll(this.#tail, bytes);
        this.#tailOffset = this.#tailSize + bytes.length;
        await this.#tail.syncData();
        if (created) await fsyncDir(this.#dir);
      } catch (error) {
        this.#uncertain = true;
        throw new LedgerError("unavailable", `Cannot write the ledger in ${this.#dir}`, {
          cause: error,
        });
      }
      this.#tailSize += bytes.length;
      const tailFirst = this.#segments[this.#segments.length - 1]!;
      const cached = this.#cache.get(tailFirst);
      if (cached) cached.push(...entries);
      else if (tailFirst === first.seq) this.#remember(tailFirst, [...entries]);
      this.#newest = entries[entries.length - 1];
    });
  }

  latest(): Promise<LedgerEntry | undefined> {
    return this.#run(async () => {
      await this.#ready();
      return this.#newest;
    });
  }

  readBefore(before: number | undefined, limit: number): Promise<LedgerEntry[]> {
    return this.#run(async () => {
      await this.#ready();
      const newest = this.#newest?.seq ?? -1;
      let end = Math.min(before ?? newest + 1, newest + 1); // exclusive
      const out: LedgerEntry[] = [];
      while (out.length < limit && end > 0) {
        const index = segmentIndexOf(this.#segments, end - 1);
        if (index < 0) break;
        const first = this.#segments[index]!;
        const entries = await this.#readSegment(first);
        for (let i = indexAtOrAfter(entries, end) - 1; i >= 0 && out.length < limit; i--) {
          out.push(entries[i]!);
        }
        end = first;
      }
      return out;
    });
  }

  readAfter(after: number | undefined, limit: number): Promise<LedgerEntry[]> {
    return this.#run(async () => {
      await this.#ready();
      const newest = this.#newest?.seq ?? -1;
      const from = Math.max(0, (after ?? -1) + 1);
      const out: LedgerEntry[] = [];
      if (from > newest) return out;
      // Read on from the segment holding `from` until the page is full (compaction may
      // have left holes, so entries are found by sequence, not by index).
      for (
        let index = Math.max(0, segmentIndexOf(this.#segments, from));
        index < this.#segments.length && out.length < limit;
        index++
      ) {
        const entries = await this.#readSegment(this.#segments[index]!);
        for (let i = indexAtOrAfter(entries, from); i < entries.length && out.length < limit; i++) {
          out.push(entries[i]!);
        }
      }
      return out;
    });
  }

  get(seq: number): Promise<LedgerEntry | undefined> {
    return this.#run(async () => {
      await this.#ready();
      if (!Number.isSafeInteger(seq) || seq < 0 || seq > (this.#newest?.seq ?? -1)) {
        return undefined;
      }
      const index = segmentIndexOf(this.#segments, seq);
      if (index < 0) return undefined;
      const entries = await this.#readSegment(this.#segments[index]!);
      const entry = entries[indexAtOrAfter(entries, seq)];
      return entry?.seq === seq ? entry : undefined;
    });
  }

  erasePayload(seq: number): Promise<void> {
    return this.#run(async () => {
      await this.#ready();
      const index = segmentIndexOf(this.#segments, seq);
      if (index < 0 || seq > (this.#newest?.seq ?? -1)) return;
      const first = this.#segments[index]!;
      const isTail = index === this.#segments.length - 1;
      const name = `${this.#dir}/${segmentName(first)}`;
      const bytes = await Deno.readFile(name);
      const parsed = parseSegment(isTail ? bytes.subarray(0, this.#tailSize) : bytes, first);
      let found = false;
      const batches = parsed.batches.map((batch) =>
        batch.map((entry) => {
          if (entry.seq !== seq || (entry.payload ?? entry.bytes) === undefined) return entry;
          found = true;
          return withoutPayload(entry);
        })
      );
      if (!found) return;
      await this.#rewrite(index, concatBytes(batches.map(frame)));
      const newest = this.#newest;
      if (newest?.seq === seq) this.#newest = withoutPayload(newest);
    });
  }

  // Replaces segment `index` with `rewritten` (see `replaceFile`: a crash leaves either file
  // whole, and a leftover .tmp is removed at load).
  async #rewrite(index: number, rewritten: Uint8Array): Promise<void> {
    const first = this.#segments[index]!;
    const isTail = index === this.#segments.length - 1;
    const name = `${this.#dir}/${segmentName(first)}`;
    try {
      await replaceFile(this.#dir, name, rewritten);
    } catch (error) {
      this.#uncertain = true;
      throw new LedgerError("unavailable", `Cannot rewrite ${name}`, { cause: error });
    }
    if (isTail) {
      // The append handle points at the replaced inode: the next append opens the new file.
      this.#closeTail();
      this.#tailSize = rewritten.length;
    }
    this.#cache.delete(first);
  }

  /**
   * Compaction: rewrites each segment holding some of `seqs` without them
   * (see {@link #rewrite}), one segment at a time; never the track's oldest
   * or newest entry. A segment left empty stays as an empty file.
   */
  remove(seqs: readonly number[]): Promise<number> {
    return this.#run(async () => {
      await this.#ready();
      const oldest = this.#segments[0];
      const newest = this.#newest?.seq ?? -1;
      const goes = new Set(seqs.filter((seq) => seq !== oldest && seq < newest));
      let removed = 0;
      let i = 0;
      const sorted = [...goes].sort((a, b) => a - b);
      while (i < sorted.length) {
        const index = segmentIndexOf(this.#segments, sorted[i]!);
        const next = this.#segments[index + 1] ?? Infinity;
        while (i < sorted.length && sorted[i]! < next) i++;
        if (index < 0) continue;
        const first = this.#segments[index]!;
        const isTail = index === this.#segments.length - 1;
        const bytes = await Deno.readFile(`${this.#dir}/${segmentName(first)}`);
        const parsed = parseSegment(isTail ? bytes.subarray(0, this.#tailSize) : bytes, first);
        const entries = parsed.batches.flat();
        const kept = entries.filter((e) => !goes.has(e.seq));
        if (kept.length === entries.length) continue;
        await this.#rewrite(index, concatBytes(framesOf(kept)));
        removed += entries.length - kept.length;
      }
      return removed;
    });
  }

  first(): Promise<number> {
    return this.#run(async () => {
      await this.#ready();
      return this.#segments[0] ?? 0;
    });
  }

  /**
   * Removes whole segments below `before`, oldest first, never the tail. Each
   * removal is made durable before the next, so a crash (or power loss)
   * leaves the track from some segment on, never a hole.
   */
  trim(before: number): Promise<number> {
    return this.#run(async () => {
      await this.#ready();
      // A segment goes when the next one starts at or below `before`: all of it is older.
      while (this.#segments.length > 1 && this.#segments[1]! <= before) {
        const first = this.#segments[0]!;
        try {
          await Deno.remove(`${this.#dir}/${segmentName(first)}`);
        } catch (error) {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
        }
        await fsyncDir(this.#dir);
        this.#segments.shift();
        this.#cache.delete(first);
      }
      return this.#segments[0] ?? 0;
    });
  }

  close(): Promise<void> {
    return this.#serial.run(() => {
      this.#handles.delete(this);
      this.#drop();
      return Promise.resolve();
    });
  }
}
