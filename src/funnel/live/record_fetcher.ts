import {
  type Ledger,
  type LedgerEntry,
  parseGroupId,
  trackKey,
  type TrackPath,
  withoutPayload,
} from "../../ledger/mod.ts";
import type { RecordSink } from "../sink.ts";

/** Options of {@linkcode RecordFetcher}. */
export interface RecordFetcherOptions {
  /** Entries read from the ledger at once (default 64). */
  readonly pageSize?: number;
  /** Pages kept once read (default 16). */
  readonly pages?: number;
}

/** Redactions remembered for pages read before them; past this, every page is dropped. */
const REDACTIONS_KEPT = 4096;

/**
 * Reads committed records for FETCHes that the live tracks' recent groups
 * cannot answer, from the ledger through its stream. A client repairing a gap
 * fetches consecutive groups, often many at once, so a read takes the whole
 * aligned page around the record asked for: concurrent FETCHes of one page
 * share one read, and the next ones are answered from the kept page.
 *
 * It is told of every commit (a {@linkcode RecordSink}): a record redacted
 * after its page was read, or while its payload is still being erased, is
 * served redacted.
 */
export class RecordFetcher implements RecordSink {
  readonly #ledger: Ledger;
  readonly #pageSize: number;
  readonly #maxPages: number;
  readonly #pages = new Map<string, Promise<readonly LedgerEntry[]>>();
  readonly #redacted = new Set<string>();

  /** A fetcher over the funnel's ledger. */
  constructor(ledger: Ledger, options: RecordFetcherOptions = {}) {
    this.#ledger = ledger;
    this.#pageSize = Math.max(1, options.pageSize ?? 64);
    this.#maxPages = Math.max(1, options.pages ?? 16);
  }

  /**
   * The committed entry `seq` of a track (as stored: a redacted record has
   * no payload), or undefined when there is none. Rejects when the ledger
   * cannot be read.
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
    let entry = (await this.#page(path, key, first, false))[seq - first];
    // A page read before `seq` was committed ends short: read it again, once.
    if (!entry && !signal?.aborted) entry = (await this.#page(path, key, first, true))[seq - first];
    if (!entry || entry.seq !== seq) return undefined;
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
    this.#pages.delete(pageKey);
    this.#pages.set(pageKey, reading);
    if (this.#pages.size > this.#maxPages) this.#pages.delete(this.#pages.keys().next().value!);
    // A failed read is not kept: the next FETCH tries the ledger again.
    reading.catch(() => {
      if (this.#pages.get(pageKey) === reading) this.#pages.delete(pageKey);
    });
    return reading;
  }

  async #read(path: TrackPath, first: number): Promise<readonly LedgerEntry[]> {
    const track = await this.#ledger.track(path, false);
    if (!track) return [];
    const size = this.#pageSize;
    return await Array.fromAsync(
      track.entries({ after: first - 1, limit: size }, { pageSize: size }),
    );
  }

  /** Nothing to do: a new track has no page yet. */
  trackCreated(_path: TrackPath, _newest: LedgerEntry | undefined): void {}

  /** Marks records that committed redactions name, and drops their kept pages. */
  committed(path: TrackPath, entries: readonly LedgerEntry[]): void {
    let key: string | undefined;
    for (const entry of entries) {
      if (entry.redacts === undefined) continue;
      key ??= trackKey(path);
      const seq = parseGroupId(entry.redacts).seq;
      if (this.#redacted.size >= REDACTIONS_KEPT) {
        // Forgetting marks could serve a page read before them unredacted: drop the pages too.
        this.#redacted.clear();
        this.#pages.clear();
      }
      this.#redacted.add(`${key}\u0000${seq}`);
      this.#pages.delete(`${key}\u0000${seq - (seq % this.#pageSize)}`);
    }
  }
}
