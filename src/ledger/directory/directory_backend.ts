import type { LedgerBackend, TrackBackend } from "../backend.ts";
import { SEGMENT_BYTES } from "./segment_file.ts";
import { DirectoryTrack, type TrackHandles } from "./track_directory.ts";
import { LedgerError } from "../errors.ts";
import { exists, fsyncDir, isSystemError, writeAll } from "./file_io.ts";
import { Serial } from "../serial.ts";
import { takeWriterLock, type WriterLock } from "./writer_lock.ts";
import { decodeStorageName, isHashedName, pathFromKey, trackStorageName } from "../storage_name.ts";
import { trackKey, type TrackPath } from "../../record/mod.ts";
import { LruCache } from "../../cache/mod.ts";
import { foldsCase } from "./case_probe.ts";

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
 * Open files are bounded, not one per track: a track opens its tail segment
 * at its first append and keeps it (and its parsed segments) only while it
 * is among the `openTracks` most recently used; opening a track reads its
 * last frame and closes the file again. So any number of tracks, and a
 * restart that opens each one to publish its newest record, stay within a
 * small file descriptor limit. A file that cannot be opened (the process is
 * out of descriptors) fails that call as `LedgerError("unavailable")`.
 *
 * On a file system that folds case (probed once at open, see case_probe.ts)
 * `tracks/room` and `tracks/Room` are one directory. Storage names are
 * ASCII (every other byte is `%XX`, hex always upper case; hashed names are
 * lower-case hex of the exact-case path), so two names collide exactly when
 * their tracks differ only in ASCII case. There the backend keeps each
 * stored name by its lower-case spelling and refuses to create a track whose
 * spelling differs from the stored one (`LedgerError("conflict")`), and
 * reads it as absent, so neither track ever sees the other's records. The
 * layout is unchanged, and on a case-sensitive file system nothing is.
 *
 * Code: the frame format and segment scanning are in directory_segment.ts,
 * one track's files in directory_track.ts, the fsync helpers in file_io.ts.
 */

/** Tracks that keep their tail segment open (and parsed segments cached) by default. */
export const OPEN_TRACKS = 128;

/** Options of {@link DirectoryBackend.open}. */
export interface DirectoryOptions {
  /** Segment size at which a new segment file starts (tests use a small one). */
  readonly segmentBytes?: number;
  /**
   * Most tracks keeping their tail segment open and parsed segments in
   * memory; the least recently used one releases both (default {@link OPEN_TRACKS}).
   */
  readonly openTracks?: number;
  /**
   * Whether the directory's file system folds case; probed at open when
   * absent (tests set it to exercise the case-insensitive rules on Linux).
   */
  readonly foldsCase?: boolean;
}

/** Stores every track as append-only, checksummed segment files under one directory. */
export class DirectoryBackend implements LedgerBackend {
  /** Backend name. */
  readonly name = "directory";
  readonly #root: string;
  readonly #segmentBytes: number;
  // Every track opened since start: each holds a few numbers, no file (those are in #handles).
  readonly #open = new Map<string, Promise<DirectoryTrack>>();
  readonly #handles: TrackHandles;
  readonly #creating = new Serial();
  readonly #lock: WriterLock;
  // Only where the file system folds case: each track directory's name by its
  // lower-case spelling. One entry per directory on disk, added when a track
  // is created, so it is bounded by the tracks stored (like #open), not by requests.
  readonly #folded: Map<string, string> | undefined;
  #closed = false;

  private constructor(
    root: string,
    segmentBytes: number,
    openTracks: number,
    lock: WriterLock,
    folded: Map<string, string> | undefined,
  ) {
    this.#root = root;
    this.#segmentBytes = segmentBytes;
    this.#handles = new LruCache(openTracks, { onEvict: (track) => track.release() });
    this.#lock = lock;
    this.#folded = folded;
  }

  /** Opens (creating it if needed) a ledger directory. */
  static async open(dir: string, options: DirectoryOptions = {}): Promise<DirectoryBackend> {
    const openTracks = options.openTracks ?? OPEN_TRACKS;
    if (!Number.isSafeInteger(openTracks) || openTracks < 1) {
      throw new RangeError(`Open tracks ${openTracks} is not a positive integer`);
    }
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
    let folded: Map<string, string> | undefined;
    try {
      const folds = options.foldsCase ?? (await foldsCase(root));
      if (folds) folded = new Map();
      for await (const item of Deno.readDir(root)) {
        if (item.name.startsWith(".tmp-")) {
          await Deno.remove(`${root}/${item.name}`, { recursive: true });
        } else if (folded && item.isDirectory && !item.name.startsWith(".")) {
          folded.set(item.name.toLowerCase(), item.name);
        }
      }
      await fsyncDir(root);
    } catch (error) {
      await lock.release();
      throw error;
    }
    return new DirectoryBackend(
      root,
      options.segmentBytes ?? SEGMENT_BYTES,
      openTracks,
      lock,
      folded,
    );
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

  /**
   * Opens a track, creating its directory durably with `create`. A failure
   * to reach its files (out of file descriptors, a disk error) is
   * `LedgerError("unavailable")`, so the request is answered 503. On a
   * file system that folds case, a track differing only in case from a
   * stored one is absent, and creating it is `LedgerError("conflict")`.
   */
  async openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined> {
    if (this.#closed) throw new LedgerError("unavailable", "The ledger is closed");
    const name = await trackStorageName(path);
    try {
      return await this.#openTrack(name, path, create);
    } catch (error) {
      if (!isSystemError(error)) throw error;
      throw new LedgerError("unavailable", `Cannot open track ${name} in ${this.#root}`, {
        cause: error,
      });
    }
  }

  async #openTrack(
    name: string,
    path: TrackPath,
    create: boolean,
  ): Promise<TrackBackend | undefined> {
    const cached = this.#open.get(name);
    if (cached) return await cached;
    const dir = `${this.#root}/${name}`;
    if (this.#heldByOtherCase(name)) return this.#otherCase(name, path, create);
    if (!(await exists(dir))) {
      if (!create) return undefined;
      // One creation at a time, so two first POSTs to a track never race on the rename.
      const taken = await this.#creating.run(async () => {
        if (this.#heldByOtherCase(name)) return true;
        if (!(await exists(dir))) await this.#create(name, path);
        this.#folded?.set(name.toLowerCase(), name);
        return false;
      });
      if (taken) return this.#otherCase(name, path, create);
    }
    const again = this.#open.get(name);
    if (again) return await again;
    const opening = DirectoryTrack.load(dir, this.#segmentBytes, this.#handles);
    this.#open.set(name, opening);
    opening.catch(() => this.#open.delete(name));
    return await opening;
  }

  /** Whether a track spelt in another case holds this name's directory. */
  #heldByOtherCase(name: string): boolean {
    const held = this.#folded?.get(name.toLowerCase());
    return held !== undefined && held !== name;
  }

  /** A track whose directory another case holds: absent to readers, refused to writers. */
  #otherCase(name: string, path: TrackPath, create: boolean): undefined {
    if (!create) return undefined;
    const held = this.#folded?.get(name.toLowerCase()) ?? name;
    const other = decodeStorageName(held);
    throw new LedgerError(
      "conflict",
      `Track "${trackKey(path)}" differs only in case from the stored track "${
        other ? trackKey(other) : held
      }", and this ledger's file system does not tell them apart`,
    );
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
    this.#handles.clear();
    await this.#lock.release();
  }
}
