import type { Ledger, TrackLedger } from "../ledger/mod.ts";
import { forkSegments, type Segment } from "./lineage.ts";
import { parseMeta, type StreamConfig } from "./meta.ts";
import { streamTrack } from "./names.ts";
import { MAX_PRODUCERS, PLAIN_TRACK, StreamHead } from "./stream_head.ts";

/** A stream's writer state read back from its track, and the newest entry it took in. */
export interface Recovered {
  /** The stream, or undefined when its newest incarnation was deleted. */
  readonly head: StreamHead | undefined;
  /** Sequence of the newest entry read (-1 for an empty track). */
  readonly seen: number;
  /** Commit time of the newest entry, ms (undefined for an empty track): the last access recorded. */
  readonly written?: number | undefined;
}

/**
 * Reads a stream's writer state back from its ledger track: newest first, up
 * to the entry that created it, collecting closure, producers and
 * `Stream-Seq` on the way. A track never created through the protocol is a
 * JSON stream of all its records (an empty track too).
 */
export async function recoverHead(track: TrackLedger): Promise<Recovered> {
  let seen = -1;
  let written: number | undefined;
  let created = -1;
  let config = PLAIN_TRACK;
  let closed = false;
  let closer: readonly [string, number, number] | undefined;
  let streamSeq: string | undefined;
  const producers = new Map<string, { epoch: number; seq: number }>();
  for await (const entry of track.entries({ direction: "backward" })) {
    if (seen < 0) (seen = entry.seq, written = commitMs(entry.wallclock));
    const meta = parseMeta(entry.meta);
    if (meta.deleted) return { head: undefined, seen, written };
    if (meta.closed && !closed) {
      closed = true;
      closer = meta.producer;
    }
    // The newest MAX_PRODUCERS producers, as folding the entries in order would keep them.
    if (meta.producer && !producers.has(meta.producer[0]) && producers.size < MAX_PRODUCERS) {
      producers.set(meta.producer[0], { epoch: meta.producer[1], seq: meta.producer[2] });
    }
    if (meta.seq !== undefined) streamSeq ??= meta.seq;
    if (meta.create) {
      created = entry.seq;
      config = meta.create;
      break;
    }
  }
  const head = new StreamHead(created, config);
  head.closed = closed;
  head.closer = closer;
  head.streamSeq = streamSeq;
  // Oldest first, so the least recently appending producer is the next forgotten.
  for (const [id, p] of [...producers].reverse()) head.setProducer(id, p);
  return { head, seen, ...(written !== undefined ? { written } : {}) };
}

/** An entry's commit time (the ledger's nanoseconds) in ms. */
export function commitMs(wallclock: bigint): number {
  return Number(wallclock / 1_000_000n);
}

/**
 * Where a stream's data lies: its own track from `created`, after the
 * inherited part of its source when it is a fork (recursively). A source is
 * read as it was when the fork was made, from the entry that created it,
 * whatever happened to its name since.
 */
export async function segmentsOf(
  ledger: Ledger,
  track: TrackLedger,
  created: number,
  config: StreamConfig,
): Promise<Segment[]> {
  const fork = config.fork;
  const own: Segment = {
    path: track.path,
    created,
    base: fork ? fork.at : created,
    last: Number.MAX_SAFE_INTEGER,
  };
  if (!fork) return [own];
  const sourcePath = streamTrack(fork.from);
  const source = await ledger.track(sourcePath, false);
  if (!source) return [own];
  let sourceConfig = PLAIN_TRACK;
  if (fork.start >= 0) {
    const entry = await source.backend.get(fork.start);
    const meta = parseMeta(entry?.meta);
    if (meta.create) sourceConfig = meta.create;
  }
  const inherited = await segmentsOf(ledger, source, fork.start, sourceConfig);
  return forkSegments(inherited, fork.at, own);
}
