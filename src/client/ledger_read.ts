/** Reading a feed's track from the ledger over HTTP: what its live link could not supply. */
import { parseGroupId } from "../record/mod.ts";
import { HttpError } from "./errors.ts";
import { type HttpContext, MAX_PAGE, readAfter } from "./http.ts";
import type { Positioned } from "./record.ts";
import type { LedgerPosition, Sequencer } from "./sequencer.ts";

/** What {@linkcode readLedgerOn} hands on. */
export interface LedgerReadSink {
  /** A record next in order, handed to the consumer. */
  readonly emit: (p: Positioned) => Promise<void>;
  /** Records the ledger no longer holds (from, to). */
  readonly skipped: (from: LedgerPosition, to: LedgerPosition) => void;
  /** True once the feed is closing: the read stops after the page in hand. */
  readonly closing: () => boolean;
}

/**
 * Reads the track at `url` after `seq`'s cursor, page by page, until its
 * newest record, handing each record on in order. A 410 that names a later
 * first record (retention removed some) is said as skipped and read on from
 * there. True when the ledger was read up to its newest record (or the track
 * does not exist yet).
 */
export async function readLedgerOn(
  http: HttpContext,
  url: URL,
  seq: Sequencer,
  sink: LedgerReadSink,
): Promise<boolean> {
  for (;;) {
    let read;
    try {
      read = await readAfter(http, url, seq.epoch, seq.cursor, MAX_PAGE);
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) return true; // no such track yet
      const first = goneUntil(err);
      // Only a 410 that moves the cursor on is acted on, so no answer can loop here.
      if (!first || first.epoch !== seq.epoch || first.seq <= seq.cursor + 1) throw err;
      // Retention removed records after the cursor: said as a gap, then read on from the first kept.
      seq.skipTo(first);
      if (seq.skipped) sink.skipped(seq.skipped.from, seq.skipped.to);
      continue;
    }
    for (const p of read.page.records) {
      if (!seq.accept(p)) continue;
      if (seq.skipped) sink.skipped(seq.skipped.from, seq.skipped.to);
      await sink.emit(p);
    }
    for (let p = seq.takeNext(); p; p = seq.takeNext()) await sink.emit(p);
    if (!read.more || sink.closing()) return true;
  }
}

/** The first available position a 410 names (records removed by retention), if it is one. */
function goneUntil(err: unknown): LedgerPosition | undefined {
  if (!(err instanceof HttpError) || err.status !== 410 || err.first === undefined) {
    return undefined;
  }
  try {
    return parseGroupId(err.first);
  } catch {
    return undefined;
  }
}
