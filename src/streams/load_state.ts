import type { Ledger, TrackLedger, TrackPath } from "../ledger/mod.ts";
import { forkSegments, type Segment } from "./lineage.ts";
import { parseMeta, type StreamConfig } from "./meta.ts";
import { streamTrack } from "./names.ts";
import { StreamState } from "./stream_state.ts";

/** What reading a track back found: a stream, a deleted one, or no track at all. */
export type Loaded =
  | { readonly state: StreamState }
  | { readonly state?: undefined; readonly gone: "absent" | "deleted" };

/** A plain track (records posted under `/tracks/`) reads as a JSON stream. */
const PLAIN_TRACK: StreamConfig = { type: "application/json" };

/**
 * Reads a stream's state back from its ledger track: newest first, up to the
 * entry that created it, collecting closure, producers and `Stream-Seq` on
 * the way. A track never created through the protocol is a JSON stream of
 * all its records.
 */
export async function loadStream(
  ledger: Ledger,
  path: TrackPath,
  name: string,
  now: number,
): Promise<Loaded> {
  const track = await ledger.track(path, false);
  if (!track) return { gone: "absent" };
  let created = -1;
  let config = PLAIN_TRACK;
  let closed = false;
  let closer: readonly [string, number, number] | undefined;
  let streamSeq: string | undefined;
  const producers = new Map<string, { epoch: number; seq: number }>();
  for await (const entry of track.entries({ direction: "backward" })) {
    const meta = parseMeta(entry.meta);
    if (meta.deleted) return { gone: "deleted" };
    if (meta.closed && !closed) {
      closed = true;
      closer = meta.producer;
    }
    if (meta.producer && !producers.has(meta.producer[0])) {
      producers.set(meta.producer[0], { epoch: meta.producer[1], seq: meta.producer[2] });
    }
    if (meta.seq !== undefined) streamSeq ??= meta.seq;
    if (meta.create) {
      created = entry.seq;
      config = meta.create;
      break;
    }
  }
  const segments = await segmentsOf(ledger, track, created, config);
  const state = new StreamState({ path, name, track, config, created, segments, now });
  state.closed = closed;
  state.closing = closed;
  state.closer = closer;
  state.streamSeq = streamSeq;
  for (const [id, p] of producers) state.producers.set(id, p);
  return { state };
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
