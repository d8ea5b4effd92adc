import {
  type CommitReader,
  type Ledger,
  type LedgerEntry,
  withoutPayload,
} from "../../ledger/mod.ts";
import { parseGroupId } from "../../record/mod.ts";
import { trackKey, type TrackPath } from "../../path/mod.ts";
import { MoqError } from "../../moq/mod.ts";
import { TrackLookups, type TrackLookupsOptions } from "./track_lookups.ts";

/** Options of {@linkcode RecordFetcher}. */
export interface RecordFetcherOptions {
  /** Entries read from the ledger at once (default 64). */
  readonly pageSize?: number;
  /** Pages kept once read (default 16). */
  readonly pages?: number;
  /**
   * Record bytes the kept pages hold at most (default
   * {@linkcode PAGE_BYTES_KEPT}); the page read last is kept even when larger.
   */
  readonly pageBytes?: number;
  /** How subscriptions' lookups of tracks not open are shared and remembered (see {@linkcode lookup}). */
  readonly lookups?: TrackLookupsOptions;
}

/** Record bytes kept in read pages: 16 pages of 64 large records would be gigabytes. */
export const PAGE_BYTES_KEPT = 32 * 1024 * 1024;

/** Redactions remembered for pages read before them; past this, every page is dropped. */
const REDACTIONS_KEPT = 4096;

/**
 * Reads committed records for FETCHes that the live tracks' recent groups
 * cannot answer, from the ledger through its stream. A client repairing a gap
 * fetches consecutive groups, often many at once, so a read takes the whole
 * aligned page around the record asked for: concurrent FETCHes of one page
 * share one read, and the next ones are answered from the kept page.
 *
 * It reads the ledger's commit feed (a {@linkcode CommitReader}): a record redacted
 * after its page was read, or while its payload is still being erased, is
 * served redacted.
 */
export class RecordFetcher implements CommitReader {
  readonly #ledger: Ledger;
  readonly #pageSize: number;
  readonly #maxPages: number;
  readonly #pages = new Map<string, Promise<readonly LedgerEntry[]>>();
  // The record bytes of each kept page that has been read, and their sum.
  readonly #pageBytes = new Map<string, number>();
  readonly #maxBytes: number;
  #bytes = 0;
  readonly #redacted = new Set<string>();
  /** Subscriptions' lookups: shared, and "missing" remembered until the feed tells the track exists. */
  readonly lookups: TrackLookups;

  /** A fetcher over the funnel's ledger. */
  constructor(ledger: Ledger, options: RecordFetcherOptions = {}) {
    this.#ledger = ledger;
    this.lookups = new TrackLookups(async (path) => {
      const track = await ledger.track(path, false);
      return track && { newest: track.newest };
    }, { known: (path) => ledger.isOpen(path), ...options.lookups });
    this.#pageSize = Math.max(1, options.pageSize ?? 64);
    this.#maxPages = Math.max(1, options.pages ?? 16);
    this.#maxBytes = Math.max(0, options.pageBytes ?? PAGE_BYTES_KEPT);
    // Redactions committed from now on are heard of in the ledger's commit order.
    ledger.commits.subscribe(this);
  }

  /** Record bytes the kept pages hold now (at most `pageBytes`, but for the page read last). */
  get keptBytes(): number {
    return this.#bytes;
  }

  /**
   * Whether `path` is a track of the ledger, and its newest entry: how the
   * live side opens a track it closed while idle, when a subscriber names it.
   * Concurrent lookups of one track share one storage call, and a track not
   * found is answered from memory for a while (see {@linkcode TrackLookups}),
   * until the ledger's commit feed tells it was created. A storage query is
   * charged to `asker`'s budget; past it the answer is "too_many".
   */
  lookup(
    path: TrackPath,
    asker?: string,
  ): Promise<{ readonly newest: LedgerEntry | undefined } | undefined | "too_many"> {
    return this.lookups.lookup(path, asker);
  }

  /**
   * The committed entry `seq` of a track (as stored: a redacted record has
   * no payload), or undefined when there is none. Rejects when the ledger
   * cannot be read, and with `MoqError("gone")` when retention removed it.
   */
  async fetch(
    path: TrackPath,
    seq: number,
    signal?: AbortSignal,
  ): Promise<LedgerEntry | undefined> {
    if (!Number.isSafeInteger(seq) || seq < 0 || signal?.aborted) return undefined;
    // Nothing past the newest committed record is read for, unless other processes write
    // the ledger too: a record they committed may not have been heard of here yet.
    const track = await this.#ledger.track(path, false);
    if (!track || (!track.shared && seq > (track.newest?.seq ?? -1))) return undefined;
    const key = trackKey(path);
    const first = seq - (seq % this.#pageSize);
    // Found by sequence, not by index: compaction leaves holes in a page.
    const at = (page: readonly LedgerEntry[]) => page.find((e) => e.seq === seq);
    let entry = at(await this.#page(path, key, first, false));
    // A page read before `seq` was committed, or cut at the byte budget, ends short: read
    // again from `seq` on, once.
    if (!entry && !signal?.aborted) entry = at(await this.#page(path, key, seq, true));
    if (!entry) {
      // Removed by retention: said as such, so the FETCH is refused as gone, not as unknown.
      if (seq < await track.first()) {
        throw new MoqError("gone", `Record ${seq} of ${key} was removed by the track's retention`);
      }
      return undefined;
    }
    return entry.payload !== undefined && this.#redacted.has(`${key}\u0000${seq}`)
      ? withoutPayload(entry)
      : entry;
  }

  #page(
    path: TrackPath,
    key: string,
    first: number,
    fresh: boolean,
  ): Promise<readonly LedgerEntry[]> {
    const pageKey = `${key}\u0000${first}`;
    const kept = this.#pages.get(pageKey);
    if (kept && !fresh) return kept;
    const reading = this.#read(path, first);
    this.#forget(pageKey);
    this.#pages.set(pageKey, reading);
    if (this.#pages.size > this.#maxPages) this.#forget(this.#pages.keys().next().value!);
    reading.then((entries) => {
      if (this.#pages.get(pageKey) !== reading) return;
      const bytes = entries.reduce((n, e) => n + entryBytes(e), 0);
      this.#pageBytes.set(pageKey, bytes);
      this.#bytes += bytes;
      // Over the byte budget: the pages used longest ago go, never the one just read.
      for (const key of this.#pages.keys()) {
        if (this.#bytes <= this.#maxBytes) break;
        if (key !== pageKey) this.#forget(key);
      }
    }, () => {
      // A failed read is not kept: the next FETCH tries the ledger again.
      if (this.#pages.get(pageKey) === reading) this.#forget(pageKey);
    });
    return reading;
  }

  // Drops a kept page and what it counted.
  #forget(pageKey: string): void {
    this.#pages.delete(pageKey);
    this.#bytes -= this.#pageBytes.get(pageKey) ?? 0;
    this.#pageBytes.delete(pageKey);
  }

  async #read(path: TrackPath, first: number): Promise<readonly LedgerEntry[]> {
    const track = await this.#ledger.track(path, false);
    if (!track) return [];
    const size = this.#pageSize;
    // At least one entry, then no more than the byte budget: large records make short pages.
    const entries: LedgerEntry[] = [];
    let bytes = 0;
    for await (
      const entry of track.entries({ after: first - 1, limit: size }, { pageSize: size })
    ) {
      bytes += entryBytes(entry);
      if (entries.length > 0 && bytes > this.#maxBytes) break;
      entries.push(entry);
    }
    return entries;
  }

  /** A track was created (here, or by another funnel): no longer missing. */
  trackCreated(path: TrackPath): void {
    this.lookups.created(path);
  }

  /**
   * Marks records that committed redactions name, and drops their kept
   * pages; the track (created by this first entry, maybe) is no longer missing.
   */
  committed(path: TrackPath, entries: readonly LedgerEntry[]): void {
    this.lookups.created(path);
    let key: string | undefined;
    for (const entry of entries) {
      if (entry.redacts === undefined) continue;
      key ??= trackKey(path);
      const seq = parseGroupId(entry.redacts).seq;
      if (this.#redacted.size >= REDACTIONS_KEPT) {
        // Forgetting marks could serve a page read before them unredacted: drop the pages too.
        this.#redacted.clear();
        this.#pages.clear();
        this.#pageBytes.clear();
        this.#bytes = 0;
      }
      this.#redacted.add(`${key}\u0000${seq}`);
      this.#forget(`${key}\u0000${seq - (seq % this.#pageSize)}`);
    }
  }
}

// About the bytes an entry holds in memory: its text (UTF-16 units) and raw bytes.
function entryBytes(entry: LedgerEntry): number {
  return (entry.payload?.length ?? 0) + (entry.bytes?.length ?? 0) + (entry.meta?.length ?? 0) +
    (entry.sender?.length ?? 0) + 64;
}
