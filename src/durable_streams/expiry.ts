import {
  type CommitReader,
  CommitRefused,
  newestOf,
  type StoredTrack,
  type TrackLedger,
} from "../ledger/mod.ts";
import type { TrackPath } from "../path/mod.ts";
import { LruCache } from "../cache/mod.ts";
import { recordEveryMs, StreamGate } from "./gate.ts";
import { commitMs } from "./load_state.ts";
import { StreamHead } from "./stream_head.ts";
import { formatMeta, parseMeta, type StreamConfig } from "./meta.ts";
import { streamKey, streamTrack } from "./names.ts";

/**
 * When a stream expires as its ledger says (ms), for the retention pass:
 * its absolute `Stream-Expires-At`, or its newest entry's commit time plus
 * its `Stream-TTL` and the time reads are recorded apart at most
 * ({@link recordEveryMs}: half the TTL, at least a second), since the last
 * read a funnel served may be that much newer; the sooner of the two;
 * undefined when it never expires.
 */
export function ledgerExpiry(config: StreamConfig, written: number): number | undefined {
  const ttl = config.ttl === undefined
    ? undefined
    : written + config.ttl * 1000 + recordEveryMs(config.ttl);
  const at = config.expiresAt === undefined ? undefined : Date.parse(config.expiresAt);
  if (ttl === undefined) return at;
  return at === undefined ? ttl : Math.min(ttl, at);
}

/** Tracks whose newest stream a pass remembers, so the next pass reads only what is new. */
export const EXPIRY_TRACKED = 10_000;

/** What a track's newest stream is, as far as `seen`. */
interface Known {
  readonly seen: number;
  /** The creating entry, -1 for a plain track (never created through the protocol). */
  readonly created: number;
  readonly config: StreamConfig | undefined;
  /** `deleted`: by DELETE (its records stay); `ended`: by this pass once expired. */
  readonly state: "live" | "deleted" | "ended";
  /** Once ended: the ending entry, below which every record goes. */
  readonly end?: number;
}

/**
 * The Durable Streams side of the ledger's retention pass: which tracks
 * hold a stream that expired, ended by a deletion entry (`expired`) so
 * every funnel reads it as absent (404), every record before that entry
 * then removable. A stream some fork still reads keeps all of its records,
 * since a fork reads what it inherited in place: links come from each
 * stream's creating entry (a fork's names its source), live or deleted
 * forks alike, followed from every live stream. A stream goes only once it
 * had expired before the last complete pass began, so every fork of it
 * (made before it expired) was seen by that pass.
 *
 * Cost: the first pass of a process reads each track's newest and first
 * entries, and reads a stream's track back to its creating entry. A track
 * found to hold nothing that can end or link (a plain track; a stream with
 * neither TTL nor expiry that is no fork; an ended stream with nothing left
 * to remove) is then skipped without a storage call until the ledger's
 * commit feed tells a commit to it ({@link commits}; a key per such track,
 * as many as tracks are stored, like the listing itself). The others are
 * read each pass: newest and first entries, and, once out of the
 * {@link EXPIRY_TRACKED} remembered, back to the creating entry again.
 */
export class StreamExpiry {
  readonly #now: () => number;
  readonly #known: LruCache<string, Known>;
  /** Streams ("created@key") a live stream reads, as the last complete pass found. */
  #needed = new Set<string>();
  #links = new Map<string, string>();
  #live: string[] = [];
  #lastStart: number | undefined;
  #start = 0;
  /** Tracks with nothing to end or link, as long as nothing is committed to them. */
  readonly #settled = new Set<string>();
  /** Tracks committed to since this pass began: not settled by it (read before the commit). */
  readonly #touched = new Set<string>();
  #passing = false;

  /** Told by the retention of every commit, so a settled track is read again after one. */
  readonly commits: CommitReader = {
    trackCreated: (path) => this.#changed(path),
    committed: (path) => this.#changed(path),
    // Another funnel's commits to tracks not open here may have been missed: read all again.
    resynced: () => this.#settled.clear(),
  };

  /** Expiry over a ledger whose pass asks at `now` (ms, the ledger's commit clock). */
  constructor(now: () => number, tracked = EXPIRY_TRACKED) {
    this.#now = now;
    this.#known = new LruCache(tracked);
  }

  #changed(path: TrackPath): void {
    const key = streamKey(path);
    this.#settled.delete(key);
    if (this.#passing) this.#touched.add(key);
  }

  /** True for a track known to hold nothing to end or link, untouched since. */
  skips(path: TrackPath): boolean {
    return this.#settled.has(streamKey(path));
  }

  /** Tracks skipped without a storage call until a commit to them (for tests of the cost). */
  get settled(): number {
    return this.#settled.size;
  }

  /** A pass begins. */
  begin(): void {
    this.#passing = true;
    this.#touched.clear();
    this.#start = this.#now();
    this.#links = new Map();
    this.#live = [];
  }

  /** A pass ended; `complete` when it visited every track (its fork links are whole). */
  end(complete: boolean): void {
    this.#passing = false;
    this.#touched.clear();
    if (!complete) return;
    const needed = new Set<string>();
    for (const stream of this.#live) {
      let source = this.#links.get(stream);
      while (source !== undefined && !needed.has(source)) {
        needed.add(source);
        source = this.#links.get(source);
      }
    }
    this.#needed = needed;
    this.#lastStart = this.#start;
  }

  /**
   * For one track: the sequence below which every record goes (the stream
   * expired, ended now or by an earlier pass), or undefined.
   */
  async cut(
    track: StoredTrack,
    open: () => Promise<TrackLedger>,
  ): Promise<number | undefined> {
    const key = streamKey(track.path);
    // A commit told from here on was perhaps not read below: the track is not settled now.
    this.#touched.delete(key);
    const newest = await newestOf(track);
    if (!newest) return undefined;
    const first = await track.backend.first();
    const known = await this.#know(track, key, newest.seq, first);
    if (known.state === "ended") {
      if (known.end !== undefined && first < known.end) return known.end;
      this.#settle(key);
      return undefined;
    }
    if (known.created < 0 || !known.config) {
      this.#settle(key);
      return undefined;
    }
    const self = linkKey(key, known.created);
    const fork = known.config.fork;
    if (fork) this.#links.set(self, linkKey(streamKey(streamTrack(fork.from)), fork.start));
    // Neither ending nor linking: nothing a pass does to it until it changes.
    if (!fork && known.config.ttl === undefined && known.config.expiresAt === undefined) {
      this.#settle(key);
    }
    if (known.state !== "live") return undefined;
    this.#live.push(self);
    const expiry = ledgerExpiry(known.config, commitMs(newest.wallclock));
    if (expiry === undefined || this.#lastStart === undefined || expiry > this.#lastStart) {
      return undefined;
    }
    if (this.#needed.has(self)) return undefined;
    const head = new StreamHead(known.created, known.config);
    const gate = new StreamGate({ head, seen: newest.seq }, this.#now);
    const draft = { meta: formatMeta({ deleted: true, expired: true })!, seal: "" };
    try {
      const intent = { kind: "expire", created: known.created, newest: newest.seq } as const;
      const { entry } = await gate.commit(await open(), draft, intent);
      this.#known.set(key, { ...known, seen: entry.seq, state: "ended", end: entry.seq });
      return entry.seq;
    } catch (error) {
      // Written to since (another funnel): not expired after all, or looked at next pass.
      if (error instanceof CommitRefused) return undefined;
      throw error;
    }
  }

  #settle(key: string): void {
    if (!this.#touched.has(key)) this.#settled.add(key);
  }

  // The track's newest stream: what was remembered, moved on by the entries committed since
  // (newest first, down to a creating entry or what was remembered).
  async #know(track: StoredTrack, key: string, newest: number, first: number): Promise<Known> {
    let known = this.#known.get(key);
    if (known?.seen === newest) return known;
    if (!known) {
      // A track that does not start with a stream's creation or deletion is a plain one.
      const oldest = parseMeta((await track.backend.readAfter(first - 1, 1))[0]?.meta);
      if (oldest.create === undefined && !oldest.deleted) {
        known = { seen: first - 1, created: -1, config: undefined, state: "live" };
      }
    }
    let deletion: "deleted" | "ended" | undefined;
    let end: number | undefined;
    let before: number | undefined;
    scan: while (true) {
      const page = await track.backend.readBefore(before, PAGE);
      for (const entry of page) {
        if (known && entry.seq <= known.seen) break scan;
        const meta = parseMeta(entry.meta);
        if (meta.deleted && deletion === undefined) {
          deletion = meta.expired ? "ended" : "deleted";
          if (meta.expired) end = entry.seq;
        }
        if (meta.create) {
          const state = deletion ?? "live";
          known = {
            seen: newest,
            created: entry.seq,
            config: meta.create,
            state,
            ...(end !== undefined ? { end } : {}),
          };
          this.#known.set(key, known);
          return known;
        }
      }
      if (page.length < PAGE) break;
      before = page[page.length - 1]!.seq;
    }
    const base = known ?? { seen: -1, created: -1, config: undefined, state: "live" as const };
    const state = deletion === undefined
      ? base.state
      : deletion === "ended" || base.state === "ended"
      ? "ended"
      : "deleted";
    known = { ...base, seen: newest, state, ...(end !== undefined ? { end } : {}) };
    this.#known.set(key, known);
    return known;
  }
}

/** Entries read per page while reading a track back. */
const PAGE = 512;

function linkKey(stream: string, created: number): string {
  return `${created}@${stream}`;
}
