import type { RetentionConfig, RetentionPolicy } from "../config/mod.ts";
import { removesRecords, retentionFor } from "../config/mod.ts";
import type { LedgerEntry } from "./entry.ts";
import { entryBytes, recordKey } from "./entry_key.ts";
import type { Ledger } from "./ledger.ts";
import type { NanoClock } from "./track_ledger.ts";
import { systemNanoClock } from "./track_ledger.ts";
import { LruCache } from "../cache/mod.ts";
import type {
  RetentionExpiry,
  RetentionOptions,
  RetentionReport,
  StoredTrack,
} from "./retention_options.ts";
import { broadcastName, parseGroupId, trackKey, type TrackPath } from "../record/mod.ts";
import { newestOf, trimStored } from "./stored_track.ts";

export { newestOf } from "./stored_track.ts";

/** Records one pass removes from one track at most; the rest go in the next pass. */
export const RETENTION_STEP = 100_000;
/** Tracks whose stored records and payload bytes are remembered between passes. */
export const RETENTION_TRACKED = 10_000;
/** Distinct keys one compaction pass of one track remembers (a record of a key beyond them stays). */
export const COMPACTION_KEYS = 100_000;
/** Entries read per page while finding where retention cuts. */
const PAGE = 512;
/** Superseded records handed to the backend in one removal. */
const REMOVE_BATCH = 4096;
/** The lock one retention pass holds on a shared ledger. */
const LOCK = "retention";

/** A track's tally: the records stored from `from` through `to`, and their payload bytes. */
interface Tally {
  from: number;
  to: number;
  records: number;
  bytes: number;
  /** False for a track not tallied (no bytes limit, and the tallies full): nothing read. */
  counted: boolean;
}

// The sequence a redaction entry names (stored by the ledger itself, so it parses).
function redactedSeq(group: string): number | undefined {
  try {
    return parseGroupId(group).seq;
  } catch {
    return undefined;
  }
}

/**
 * Applies the retention policies to every track of a ledger, one pass at a
 * time: where each track is cut (age, count, bytes; the newest record
 * always stays, and so does every entry from the first one carrying
 * protocol metadata on: a Durable Stream's creation keeps its whole stream),
 * then the backend's `trim`, which removes oldest first
 * so that a pass stopped anywhere leaves every track readable from some
 * position on. On a shared ledger (PostgreSQL) one process at a time runs a
 * pass, under the backend's lock.
 *
 * A pass opens no track (no `TrackLedger`): it works on each track's
 * storage directly (a track open here goes through its ledger), and a track
 * no policy applies to, that the expiry layer skips, costs no storage call.
 *
 * @example
 * ```ts
 * const retention = new Retention(ledger, { config: { default: { maxAgeMs: 86_400_000 }, rules: [] } });
 * await retention.pass();
 * ```
 */
export class Retention {
  readonly #ledger: Ledger;
  readonly #config: Pick<RetentionConfig, "default" | "rules">;
  readonly #clock: NanoClock;
  readonly #step: number;
  readonly #onRemoved: RetentionOptions["onRemoved"];
  readonly #onError: RetentionOptions["onError"];
  readonly #onCompacted: RetentionOptions["onCompacted"];
  readonly #compactionKeys: number;
  readonly #pins: (entry: LedgerEntry) => boolean;
  readonly #expire: RetentionExpiry | undefined;
  // Keyed by track: bounded, and a tally dropped is only counted again.
  readonly #tallies: LruCache<string, Tally>;
  readonly #tracked: number;
  // Tracks visited by this process: the first visit also clears what a pass stopped halfway
  // may have left below the first available record (S3 batches under a raised floor).
  readonly #visited: LruCache<string, true>;

  /** Retention over `ledger`. */
  constructor(ledger: Ledger, options: RetentionOptions) {
    this.#ledger = ledger;
    this.#config = options.config;
    this.#clock = options.clock ?? systemNanoClock();
    this.#step = options.step ?? RETENTION_STEP;
    this.#onRemoved = options.onRemoved;
    this.#onError = options.onError;
    this.#onCompacted = options.onCompacted;
    this.#compactionKeys = options.compactionKeys ?? COMPACTION_KEYS;
    this.#pins = options.pins ?? ((entry) => entry.meta !== undefined);
    this.#tracked = options.tracked ?? RETENTION_TRACKED;
    this.#expire = options.expire;
    this.#tallies = new LruCache(this.#tracked);
    this.#visited = new LruCache(options.tracked ?? RETENTION_TRACKED);
    // Told for as long as the ledger is: a retention lives as long as its ledger.
    if (this.#expire?.commits) ledger.commits.subscribe(this.#expire.commits);
  }

  /** True when some policy removes records (else a pass has nothing to do). */
  get active(): boolean {
    return this.#expire !== undefined || removesRecords(this.#config.default) ||
      this.#config.rules.some((r) => removesRecords(r.policy));
  }

  /** The byte tallies kept (for tests of the bound). */
  get tallies(): number {
    return this.#tallies.size;
  }

  /**
   * One pass over every track. Resolves undefined when another process
   * sharing the ledger is running one. Once `signal` aborts (shutdown) it
   * stops after the track in progress; the next pass goes on from there.
   */
  async pass(signal?: AbortSignal): Promise<RetentionReport | undefined> {
    if (!this.active) {
      const stored = { records: 0, bytes: 0, uncounted: 0 };
      return {
        tracks: 0,
        removed: 0,
        removedBytes: 0,
        failed: 0,
        compacted: 0,
        uncompactable: 0,
        stored,
      };
    }
    const backend = this.#ledger.backend;
    if (backend.exclusive) return await backend.exclusive(LOCK, () => this.#passAll(signal));
    return await this.#passAll(signal);
  }

  async #passAll(signal: AbortSignal | undefined): Promise<RetentionReport> {
    let tracks = 0;
    let removed = 0;
    let removedBytes = 0;
    let failed = 0;
    let compacted = 0;
    let uncompactable = 0;
    const stored = { records: 0, bytes: 0, uncounted: 0 };
    this.#expire?.begin();
    let complete = true;
    for (const path of await this.#ledger.tracks()) {
      if (signal?.aborted) {
        complete = false;
        break;
      }
      const policy = retentionFor(this.#config, broadcastName(path));
      const expire = this.#expire !== undefined && !this.#expire.skips?.(path);
      if (!expire && !removesRecords(policy)) continue;
      if (expire) {
        try {
          const ended = await this.#ended(path);
          if (ended) {
            tracks++;
            removed += ended.records;
            if (ended.records > 0) this.#onRemoved?.(ended.track, ended.records, 0);
            continue;
          }
        } catch (error) {
          failed++;
          complete = false;
          this.#onError?.(path, error);
          continue;
        }
      }
      if (!removesRecords(policy)) continue;
      // One track's failure (its storage away for now) holds up no other: it is tried
      // again at the next pass, from where it stopped.
      try {
        const track = await this.#stored(path);
        if (!track) continue;
        tracks++;
        const done = await this.#trimTrack(track, policy);
        removed += done.records;
        removedBytes += done.bytes;
        if (done.records > 0) this.#onRemoved?.(track, done.records, done.bytes);
        if (policy.compactKey !== undefined && !track.backend.remove) uncompactable++;
        else if (policy.compactKey !== undefined) {
          const superseded = await this.#compactTrack(track, policy.compactKey, done.tally);
          compacted += superseded;
          if (superseded > 0) this.#onCompacted?.(track, superseded);
        }
        if (!done.tally.counted) stored.uncounted++;
        else (stored.records += done.tally.records, stored.bytes += done.tally.bytes);
      } catch (error) {
        failed++;
        this.#onError?.(path, error);
      }
    }
    this.#expire?.end(complete && failed === 0);
    return { tracks, removed, removedBytes, failed, compacted, uncompactable, stored };
  }

  // A track open here is its ledger (its newest kept in memory); any other is read from storage
  // without opening it, so a pass leaves the open tracks as it found them.
  async #stored(path: TrackPath): Promise<StoredTrack | undefined> {
    if (this.#ledger.isOpen(path)) return await this.#ledger.track(path, false);
    const backend = await this.#ledger.backend.openTrack(path, false);
    return backend && { path, backend, shared: backend.commit !== undefined };
  }

  // A track the layer above ended: every record below its cut goes (oldest first, as any
  // trim, at most `step` a pass; the layer names the same cut again next pass).
  async #ended(path: TrackPath): Promise<{ track: StoredTrack; records: number } | undefined> {
    const track = await this.#stored(path);
    if (!track) return undefined;
    const open = async () => {
      const ledger = await this.#ledger.track(path, false);
      if (!ledger) throw new Error(`The track ${trackKey(path)} is gone`);
      return ledger;
    };
    const cut = await this.#expire!.cut(track, open);
    if (cut === undefined) return undefined;
    const first = await track.backend.first();
    const until = Math.min(cut, first + this.#step);
    const seqs: number[] = [];
    for await (const entry of this.#from(track, first, until - 1)) seqs.push(entry.seq);
    const now = await trimStored(track, until);
    this.#tallies.delete(trackKey(track.path));
    return { track, records: seqs.filter((seq) => seq < now).length };
  }

  // Compaction: reads the track newest first, remembering each key met; an older record of a
  // key already met is superseded and goes, in ascending batches. The oldest stored record
  // stays (it marks where the track starts), as does every record without a key.
  async #compactTrack(track: StoredTrack, field: string, tally: Tally): Promise<number> {
    const remove = track.backend.remove!.bind(track.backend);
    const first = await track.backend.first();
    // A track that starts with stream state (a Durable Stream's creation) is read by offsets
    // its protocol hands out: like retention, compaction leaves all of it.
    const oldest = (await track.backend.readAfter(first - 1, 1))[0];
    if (oldest && this.#pins(oldest)) return 0;
    const seen = new Set<string>();
    let goes: number[] = [];
    let goesBytes = 0;
    let removed = 0;
    // The tally loses what goes; a removal that took fewer than asked has it counted again.
    const removeGoes = async (): Promise<void> => {
      const n = await remove(goes.reverse());
      removed += n;
      if (n === goes.length) (tally.records -= n, tally.bytes -= goesBytes);
      else tally.from = -1; // counted again at the next pass (see #tallied)
      goes = [];
      goesBytes = 0;
    };
    let before: number | undefined;
    while (true) {
      const page = await track.backend.readBefore(before, PAGE);
      if (page.length === 0) break;
      for (const entry of page) {
        const key = recordKey(entry, field);
        if (key === undefined) continue;
        if (seen.has(key)) {
          if (entry.seq > first && entry.seq <= tally.to) {
            goes.push(entry.seq);
            goesBytes += entryBytes(entry);
          }
        } else if (seen.size < this.#compactionKeys) seen.add(key);
      }
      before = page[page.length - 1]!.seq;
      if (goes.length >= REMOVE_BATCH) await removeGoes();
    }
    if (goes.length > 0) await removeGoes();
    return removed;
  }

  async #trimTrack(
    track: StoredTrack,
    policy: RetentionPolicy,
  ): Promise<{ records: number; bytes: number; tally: Tally }> {
    const newest = await newestOf(track);
    if (!newest) {
      return {
        records: 0,
        bytes: 0,
        tally: { from: 0, to: -1, records: 0, bytes: 0, counted: true },
      };
    }
    const first = await track.backend.first();
    let cut = first;
    if (policy.maxCount !== undefined) cut = Math.max(cut, newest.seq + 1 - policy.maxCount);
    const key = trackKey(track.path);
    // Kept for every track while there is room (what it stores is reported), read on only from
    // the last pass; a bytes limit needs one, so it takes the least recently used one's place
    // (that track is counted again from its first record when its turn comes).
    const room = this.#tallies.has(key) || this.#tallies.size < this.#tracked;
    const tally = room || policy.maxBytes !== undefined
      ? await this.#tallied(track, key, first, newest.seq)
      : { from: first, to: newest.seq, records: 0, bytes: 0, counted: false };
    if (policy.maxBytes !== undefined) {
      let bytes = tally.bytes;
      if (bytes > policy.maxBytes) {
        for await (const entry of this.#from(track, first, newest.seq)) {
          if (bytes <= policy.maxBytes) break;
          bytes -= entryBytes(entry);
          cut = Math.max(cut, entry.seq + 1);
        }
      }
    }
    if (policy.maxAgeMs !== undefined) {
      const oldest = this.#clock() - BigInt(policy.maxAgeMs) * 1_000_000n;
      for await (const entry of this.#from(track, Math.max(first, cut), newest.seq)) {
        if (entry.wallclock >= oldest) break;
        cut = entry.seq + 1;
      }
    }
    cut = Math.min(cut, newest.seq, first + this.#step);
    const firstVisit = !this.#visited.has(key);
    this.#visited.set(key, true);
    if (cut <= first) {
      if (firstVisit) await trimStored(track, first);
      return { records: 0, bytes: 0, tally };
    }
    // What goes is read once before it goes: an entry the pins keep (a Durable Stream's
    // creation, closure or deletion) stops the cut, since its layer reads it back; the tally
    // drops what goes.
    const read: { seq: number; size: number }[] = [];
    for await (const e of this.#from(track, first, cut - 1)) {
      if (this.#pins(e)) {
        cut = e.seq;
        break;
      }
      read.push({ seq: e.seq, size: entryBytes(e) });
    }
    if (cut <= first) return { records: 0, bytes: 0, tally };
    const now = await trimStored(track, cut);
    // What was removed: the records read below the new first (compaction may have left holes).
    const gone = read.filter((r) => r.seq < now);
    const bytes = gone.reduce((n, r) => n + r.size, 0);
    tally.from = now;
    tally.records -= gone.length;
    tally.bytes -= bytes;
    return { records: gone.length, bytes: policy.maxBytes === undefined ? 0 : bytes, tally };
  }

  // The tally of `first`..`newest`: the kept one moved on by what was committed since.
  async #tallied(track: StoredTrack, key: string, first: number, newest: number): Promise<Tally> {
    const kept = this.#tallies.get(key);
    if (kept && kept.from === first && kept.to <= newest) {
      if (await this.#count(track, kept, newest, kept.to)) return kept;
    }
    const tally = { from: first, to: first - 1, records: 0, bytes: 0, counted: true };
    this.#tallies.set(key, tally);
    await this.#count(track, tally, newest, tally.to);
    return tally;
  }

  // Adds the entries after the tally through `newest`. False when one redacts a record the
  // tally counted before (through `counted`): its payload is erased since, so the tally
  // would count bytes no longer kept and the limit would take records inside the window.
  async #count(
    track: StoredTrack,
    tally: Tally,
    newest: number,
    counted: number,
  ): Promise<boolean> {
    for await (const entry of this.#from(track, tally.to + 1, newest)) {
      const target = entry.redacts === undefined ? undefined : redactedSeq(entry.redacts);
      if (target !== undefined && target >= tally.from && target <= counted) return false;
      tally.bytes += entryBytes(entry);
      tally.records++;
      tally.to = entry.seq;
    }
    return true;
  }

  // The entries from `from` through `to`, oldest first, a page at a time.
  async *#from(track: StoredTrack, from: number, to: number): AsyncGenerator<LedgerEntry> {
    let after = from - 1;
    while (after < to) {
      const page = await track.backend.readAfter(after, Math.min(PAGE, to - after));
      if (page.length === 0) return;
      for (const entry of page) {
        if (entry.seq > to) return;
        yield entry;
      }
      after = page[page.length - 1]!.seq;
    }
  }
}
