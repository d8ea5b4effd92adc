import type { LedgerBackend, TrackBackend } from "./backend.ts";
import { decodeBatch, encodeBatch, withoutPayload } from "./codec.ts";
import { crc32 } from "./crc32.ts";
import type { LedgerEntry } from "./entry.ts";
import { LedgerError } from "./errors.ts";
import { Serial } from "./serial.ts";
import { decodeStorageName, isHashedName, pathFromKey, trackStorageName } from "./storage_name.ts";
import { trackKey, type TrackPath } from "./track_path.ts";
import { concatBytes } from "../wire/mod.ts";

/*
 * On-disk layout (one directory per track, append-only segment files):
 *
 *   <dir>/tracks/<name>/             name from trackStorageName: never escapes tracks/
 *   <dir>/tracks/<name>/path         only for hashed names: the track path text
 *   <dir>/tracks/<name>/<first seq, 16 digits>.seg
 *
 * A segment is a run of frames, one frame per committed batch:
 *   u32 LE body length | u32 LE CRC-32 of body | body (JSON array of entries) | u32 LE body length
 * A batch is therefore visible completely or not at all. `append` writes the
 * frame, fdatasyncs the segment, and when it created the segment file also
 * fsyncs the track directory, before it resolves; batches are written one at
 * a time, so every frame before the last was synced before the last began.
 *
 * At open only the end of the last segment is read: the trailing length
 * locates the last frame, and if it is whole and its checksum matches, the
 * tail is clean and that frame holds the newest entry (`latest()` never
 * scans history). Otherwise (a crash cut a write short) the last segment is
 * scanned from its start; the first frame that is short, fails its checksum
 * or breaks the numbering marks the torn tail, which is truncated away and
 * fsynced before anything is served.
 *
 * Segments roll at SEGMENT_BYTES, so a history page reads one or two segment
 * files (the two most recently read are cached parsed). Redaction rewrites the one
 * segment holding the record into `<seg>.tmp`, fsyncs it, renames it over the
 * segment and fsyncs the directory: the payload bytes leave the disk (the old
 * inode is freed) and a crash leaves either the old or the new segment, never
 * a mix. Stray `.tmp` files are removed at open.
 *
 * Track creation builds `tracks/.tmp-<uuid>/` (with `path` when hashed),
 * fsyncs it and renames it into place, then fsyncs `tracks/`.
 */

/** A segment rolls over once it reaches this size. */
const SEGMENT_BYTES = 1 << 20;
/** Parsed segments kept in memory per track for paging. */
const CACHED_SEGMENTS = 2;
const HEADER = 8;
const TRAILER = 4;
const SEGMENT = /^(\d{16})\.seg$/;

function segmentName(first: number): string {
  return `${String(first).padStart(16, "0")}.seg`;
}

/** Options of {@link DirectoryBackend.open}. */
export interface DirectoryOptions {
  /** Segment size at which a new segment file starts (tests use a small one). */
  readonly segmentBytes?: number;
}

/** Stores every track as append-only, checksummed segment files under one directory. */
export class DirectoryBackend implements LedgerBackend {
  /** Backend name. */
  readonly name = "directory";
  readonly #root: string;
  readonly #segmentBytes: number;
  readonly #open = new Map<string, Promise<DirectoryTrack>>();
  readonly #creating = new Serial();
  #closed = false;

  private constructor(root: string, segmentBytes: number) {
    this.#root = root;
    this.#segmentBytes = segmentBytes;
  }

  /** Opens (creating it if needed) a ledger directory. */
  static async open(dir: string, options: DirectoryOptions = {}): Promise<DirectoryBackend> {
    const base = dir.replace(/\/+$/, "") || "/";
    const root = `${base}/tracks`;
    if (!(await exists(root))) {
      await Deno.mkdir(root, { recursive: true });
      // Make the new directories' own entries durable too.
      await fsyncDir(base);
      await fsyncDir(`${base}/..`);
    }
    for await (const item of Deno.readDir(root)) {
      if (item.name.startsWith(".tmp-")) {
        await Deno.remove(`${root}/${item.name}`, { recursive: true });
      }
    }
    await fsyncDir(root);
    return new DirectoryBackend(root, options.segmentBytes ?? SEGMENT_BYTES);
  }

  /** Lists tracks with one directory read (plus one small read per hashed name). */
  async listTracks(): Promise<TrackPath[]> {
    const out: TrackPath[] = [];
    for await (const item of Deno.readDir(this.#root)) {
      if (!item.isDirectory || item.name.startsWith(".")) continue;
      let path = decodeStorageName(item.name);
      if (!path && isHashedName(item.name)) {
        const text = await Deno.readTextFile(`${this.#root}/${item.name}/path`).catch(() => "");
        path = pathFromKey(text);
      }
      if (path) out.push(path);
    }
    return out;
  }

  /** Opens a track, creating its directory durably with `create`. */
  async openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined> {
    if (this.#closed) throw new LedgerError("unavailable", "The ledger is closed");
    const name = await trackStorageName(path);
    const cached = this.#open.get(name);
    if (cached) return await cached;
    const dir = `${this.#root}/${name}`;
    if (!(await exists(dir))) {
      if (!create) return undefined;
      // One creation at a time, so two first POSTs to a track never race on the rename.
      await this.#creating.run(async () => {
        if (!(await exists(dir))) await this.#create(name, path);
      });
    }
    const again = this.#open.get(name);
    if (again) return await again;
    const opening = DirectoryTrack.load(dir, this.#segmentBytes);
    this.#open.set(name, opening);
    opening.catch(() => this.#open.delete(name));
    return await opening;
  }

  async #create(name: string, path: TrackPath): Promise<void> {
    const tmp = `${this.#root}/.tmp-${crypto.randomUUID()}`;
    await Deno.mkdir(tmp);
    try {
      if (isHashedName(name)) {
        const file = await Deno.open(`${tmp}/path`, { write: true, createNew: true });
        try {
          await writeAll(file, new TextEncoder().encode(trackKey(path)));
          await file.sync();
        } finally {
          file.close();
        }
      }
      await fsyncDir(tmp);
      await Deno.rename(tmp, `${this.#root}/${name}`);
    } catch (error) {
      // Best-effort cleanup of the temporary directory; the error is handled below.
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
      // A concurrent creator won the rename: the track exists, which is all we want.
      if (!(await exists(`${this.#root}/${name}`))) throw error;
      return;
    }
    await fsyncDir(this.#root);
  }

  /** Closes every open segment file. */
  async close(): Promise<void> {
    this.#closed = true;
    const tracks = await Promise.allSettled(this.#open.values());
    this.#open.clear();
    for (const t of tracks) if (t.status === "fulfilled") await t.value.close();
  }
}

interface ParsedSegment {
  /** Batches in order. */
  readonly batches: LedgerEntry[][];
  /** Bytes of valid frames from the start. */
  readonly validLength: number;
}

function parseSegment(bytes: Uint8Array, first: number): ParsedSegment {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const batches: LedgerEntry[][] = [];
  let offset = 0;
  let next = first;
  while (offset + HEADER <= bytes.length) {
    const length = view.getUint32(offset, true);
    const sum = view.getUint32(offset + 4, true);
    const end = offset + HEADER + length + TRAILER;
    if (length === 0 || end > bytes.length) break;
    const body = bytes.subarray(offset + HEADER, end - TRAILER);
    if (view.getUint32(end - TRAILER, true) !== length || crc32(body) !== sum) break;
    let entries: LedgerEntry[];
    try {
      entries = decodeBatch(body);
    } catch {
      // An undecodable batch ends the readable part of the file, like a torn write.
      break;
    }
    if (entries[0]!.seq !== next) break;
    next = entries[entries.length - 1]!.seq + 1;
    batches.push(entries);
    offset = end;
  }
  return { batches, validLength: offset };
}

function frame(entries: readonly LedgerEntry[]): Uint8Array {
  const body = encodeBatch(entries);
  const out = new Uint8Array(HEADER + body.length + TRAILER);
  const view = new DataView(out.buffer);
  view.setUint32(0, body.length, true);
  view.setUint32(4, crc32(body), true);
  out.set(body, HEADER);
  view.setUint32(HEADER + body.length, body.length, true);
  return out;
}

class DirectoryTrack implements TrackBackend {
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
          if (entry.seq !== seq || entry.payload === undefined) return entry;
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

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

async function fsyncDir(path: string): Promise<void> {
  const dir = await Deno.open(path, { read: true });
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.length) done += await file.write(bytes.subarray(done));
}

async function readRange(file: Deno.FsFile, start: number, end: number): Promise<Uint8Array> {
  const out = new Uint8Array(Math.max(0, end - start));
  let done = 0;
  await file.seek(start, Deno.SeekMode.Start);
  while (done < out.length) {
    const n = await file.read(out.subarray(done));
    if (n === null) break;
    done += n;
  }
  return out.subarray(0, done);
}

/**
 * The entries of the last frame of a segment when the segment ends with a
 * whole, checksummed frame; undefined when it is empty or its tail is torn.
 */
async function readLastFrame(file: Deno.FsFile, size: number): Promise<LedgerEntry[] | undefined> {
  if (size < HEADER + TRAILER + 1) return undefined;
  const trailer = await readRange(file, size - TRAILER, size);
  if (trailer.length < TRAILER) return undefined;
  const length = new DataView(trailer.buffer, trailer.byteOffset).getUint32(0, true);
  const start = size - TRAILER - length - HEADER;
  if (length === 0 || start < 0) return undefined;
  const bytes = await readRange(file, start, size);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length !== size - start || view.getUint32(0, true) !== length) return undefined;
  const body = bytes.subarray(HEADER, HEADER + length);
  if (crc32(body) !== view.getUint32(4, true)) return undefined;
  try {
    return decodeBatch(body);
  } catch {
    // Undecodable: the caller treats the batch as absent.
    return undefined;
  }
}
