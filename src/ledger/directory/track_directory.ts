import type { TrackBackend } from "../backend.ts";
import { withoutPayload } from "../codec.ts";
import type { LedgerEntry } from "../entry.ts";
import { LedgerError } from "../errors.ts";
import { fsyncDir, readRange, writeAll } from "./file_io.ts";
import { Serial } from "../serial.ts";
import { concatBytes } from "../../wire/mod.ts";
import { frame, parseSegment, readLastFrame, SEGMENT, segmentName } from "./segment_file.ts";

/** Parsed segments kept in memory per track for paging. */
const CACHED_SEGMENTS = 2;

/**
 * One track of the directory backend: its segment files, the open tail
 * segment it appends to, and a small cache of parsed segments for paging.
 */
export class DirectoryTrack implements TrackBackend {
  readonly #dir: string;
  readonly #segmentBytes: number;
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

  private constructor(dir: string, segmentBytes: number) {
    this.#dir = dir;
    this.#segmentBytes = segmentBytes;
  }

  /** Opens the track in `dir`, truncating a torn tail before anything is served. */
  static async load(dir: string, segmentBytes: number): Promise<DirectoryTrack> {
    const track = new DirectoryTrack(dir, segmentBytes);
    await track.#reload();
    return track;
  }

  /** Reads the directory and the last segment, truncating a torn tail. */
  async #reload(): Promise<void> {
    this.#closeTail();
    this.#cache.clear();
    const segments: number[] = [];
    for await (const item of Deno.readDir(this.#dir)) {
      const match = SEGMENT.exec(item.name);
      if (match) segments.push(Number(match[1]));
      else if (item.name.endsWith(".tmp")) await Deno.remove(`${this.#dir}/${item.name}`);
    }
    segments.sort((a, b) => a - b);
    this.#segments = segments;
    this.#newest = undefined;
    this.#tailSize = 0;
    const last = segments[segments.length - 1];
    if (last === undefined) {
      this.#uncertain = false;
      return;
    }
    const file = await Deno.open(`${this.#dir}/${segmentName(last)}`, { read: true, write: true });
    try {
      const size = (await file.stat()).size;
      const lastFrame = await readLastFrame(file, size);
      if (lastFrame) {
        this.#tailSize = size;
        this.#newest = lastFrame[lastFrame.length - 1];
      } else {
        const bytes = await readRange(file, 0, size);
        const parsed = parseSegment(bytes, last);
        if (parsed.validLength < bytes.length) {
          // A torn tail: a batch that was never acknowledged. Remove it before serving anything.
          await file.truncate(parsed.validLength);
          await file.sync();
        }
        this.#tailSize = parsed.validLength;
        const entries = parsed.batches.flat();
        this.#remember(last, entries);
        this.#newest = entries[entries.length - 1];
      }
      this.#tail = file;
    } catch (error) {
      file.close();
      throw error;
    }
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

  #ready(): Promise<void> {
    return this.#uncertain ? this.#reload() : Promise.resolve();
  }

  append(entries: readonly LedgerEntry[]): Promise<void> {
    return this.#serial.run(async () => {
      await this.#ready();
      const first = entries[0];
      if (!first) return;
      const expected = this.#newest ? this.#newest.seq + 1 : 0;
      if (first.seq !== expected) {
        throw new RangeError(`Append out of order: seq ${first.seq}, expected ${expected}`);
      }
      const bytes = frame(entries);
      try {
        let created = false;
        if (!this.#tail || this.#tailSize >= this.#segmentBytes) {
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
    return this.#serial.run(async () => {
      await this.#ready();
      return this.#newest;
    });
  }

  readBefore(before: number | undefined, limit: number): Promise<LedgerEntry[]> {
    return this.#serial.run(async () => {
      await this.#ready();
      const newest = this.#newest?.seq ?? -1;
      let end = Math.min(before ?? newest + 1, newest + 1); // exclusive
      const out: LedgerEntry[] = [];
      while (out.length < limit && end > 0) {
        const index = this.#segmentIndexOf(end - 1);
        if (index < 0) break;
        const first = this.#segments[index]!;
        const entries = await this.#readSegment(first);
        for (let seq = end - 1; seq >= first && out.length < limit; seq--) {
          const entry = entries[seq - first];
          if (entry) out.push(entry);
        }
        end = first;
      }
      return out;
    });
  }

  readAfter(after: number | undefined, limit: number): Promise<LedgerEntry[]> {
    return this.#serial.run(async () => {
      await this.#ready();
      const newest = this.#newest?.seq ?? -1;
      const from = Math.max(0, (after ?? -1) + 1);
      const out: LedgerEntry[] = [];
      if (from > newest) return out;
      // Segments are contiguous: read on from the one holding `from` until the page is full.
      for (
        let index = Math.max(0, this.#segmentIndexOf(from));
        index < this.#segments.length && out.length < limit;
        index++
      ) {
        const first = this.#segments[index]!;
        const entries = await this.#readSegment(first);
        for (let seq = Math.max(from, first); seq <= newest && out.length < limit; seq++) {
          const entry = entries[seq - first];
          if (!entry) break;
          out.push(entry);
        }
      }
      return out;
    });
  }

  get(seq: number): Promise<LedgerEntry | undefined> {
    return this.#serial.run(async () => {
      await this.#ready();
      if (!Number.isSafeInteger(seq) || seq < 0 || seq > (this.#newest?.seq ?? -1)) {
        return undefined;
      }
      const index = this.#segmentIndexOf(seq);
      if (index < 0) return undefined;
      const first = this.#segments[index]!;
      return (await this.#readSegment(first))[seq - first];
    });
  }

  erasePayload(seq: number): Promise<void> {
    return this.#serial.run(async () => {
      await this.#ready();
      const index = this.#segmentIndexOf(seq);
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
      const rewritten = concatBytes(batches.map(frame));
      const tmp = `${name}.tmp`;
      try {
        const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
        try {
          await writeAll(file, rewritten);
          await file.sync();
        } finally {
          file.close();
        }
        await Deno.rename(tmp, name);
        await fsyncDir(this.#dir);
      } catch (error) {
        this.#uncertain = true;
        throw new LedgerError("unavailable", `Cannot rewrite ${name}`, { cause: error });
      }
      if (isTail) {
        // The append handle points at the replaced inode: reopen the new file.
        this.#closeTail();
        this.#tail = await Deno.open(name, { read: true, write: true });
        this.#tailSize = rewritten.length;
      }
      this.#cache.delete(first);
      const newest = this.#newest;
      if (newest?.seq === seq) this.#newest = withoutPayload(newest);
    });
  }

  /** Index into #segments of the segment holding `seq`, or -1. */
  #segmentIndexOf(seq: number): number {
    let lo = 0;
    let hi = this.#segments.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.#segments[mid]! <= seq) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  close(): Promise<void> {
    return this.#serial.run(() => {
      this.#closeTail();
      return Promise.resolve();
    });
  }
}
