import type { LedgerBackend, TrackBackend } from "../backend.ts";
import { SEGMENT_BYTES } from "./segment_file.ts";
import { DirectoryTrack } from "./track_directory.ts";
import { LedgerError } from "../errors.ts";
import { exists, fsyncDir, writeAll } from "./file_io.ts";
import { Serial } from "../serial.ts";
import { takeWriterLock, type WriterLock } from "./writer_lock.ts";
import { decodeStorageName, isHashedName, pathFromKey, trackStorageName } from "../storage_name.ts";
import { trackKey, type TrackPath } from "../../record/mod.ts";

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
 *
 * Code: the frame format and segment scanning are in directory_segment.ts,
 * one track's files in directory_track.ts, the fsync helpers in file_io.ts.
 */

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
  readonly #lock: WriterLock;
  #closed = false;

  private constructor(root: string, segmentBytes: number, lock: WriterLock) {
    this.#root = root;
    this.#segmentBytes = segmentBytes;
    this.#lock = lock;
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
    // One writing process per directory: a second refuses to start, naming the first.
    const lock = await takeWriterLock(base);
    try {
      for await (const item of Deno.readDir(root)) {
        if (item.name.startsWith(".tmp-")) {
          await Deno.remove(`${root}/${item.name}`, { recursive: true });
        }
      }
      await fsyncDir(root);
    } catch (error) {
      await lock.release();
      throw error;
    }
    return new DirectoryBackend(root, options.segmentBytes ?? SEGMENT_BYTES, lock);
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
    await this.#lock.release();
  }
}
