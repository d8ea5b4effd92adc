import type { TrackLedger, TrackPath } from "../ledger/mod.ts";
import { positionOf, type Segment } from "./lineage.ts";
import type { StreamConfig } from "./meta.ts";
import { isJsonType } from "./content_type.ts";

/** What an idempotent producer last appended in a stream. */
export interface ProducerState {
  readonly epoch: number;
  readonly seq: number;
  /** The commit of that append, while it is in flight: a duplicate waits for it. */
  readonly pending?: Promise<unknown>;
}

/**
 * One stream as this process knows it: its configuration, where its data
 * lies in the ledger, and the writer state (closure, producers, Stream-Seq)
 * recovered from its entries.
 */
export class StreamState {
  /** The stream's ledger track. */
  readonly path: TrackPath;
  /** Its name under `/v1/stream/`. */
  readonly name: string;
  /** The track's ledger. */
  readonly track: TrackLedger;
  /** Configuration from the creating entry (a plain track's: application/json). */
  readonly config: StreamConfig;
  /** Ledger sequence of the creating entry; -1 for a track created without one. */
  readonly created: number;
  /** Where its data lies, in position order; the last one is its own track. */
  readonly segments: readonly Segment[];
  /** Closed, as readers see it: the closing entry is committed. */
  closed = false;
  /** Closed or being closed, as writers see it: no more appends. */
  closing = false;
  /** The producer append that closed it, if one did. */
  closer: readonly [string, number, number] | undefined;
  /** Idempotent producers by id. */
  readonly producers = new Map<string, ProducerState>();
  /** The last `Stream-Seq` appended. */
  streamSeq: string | undefined;
  /** Last read or write, ms, for the sliding TTL. */
  lastAccess: number;

  /** Creates the state; `segments` must end with the stream's own. */
  constructor(init: {
    path: TrackPath;
    name: string;
    track: TrackLedger;
    config: StreamConfig;
    created: number;
    segments: readonly Segment[];
    now: number;
  }) {
    this.path = init.path;
    this.name = init.name;
    this.track = init.track;
    this.config = init.config;
    this.created = init.created;
    this.segments = init.segments;
    this.lastAccess = init.now;
  }

  /** The stream's own segment. */
  get own(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  /** True for `application/json` streams (message boundaries, arrays). */
  get json(): boolean {
    return isJsonType(this.config.type);
  }

  /** Position of the stream's end: after its newest committed entry. */
  tail(): number {
    return positionOf(this.own, Math.max(this.track.newest?.seq ?? -1, this.created));
  }

  /** Position of the stream's start. */
  start(): number {
    return this.segments[0]!.base;
  }

  /** True once the TTL or the absolute expiry has passed. */
  expired(now: number): boolean {
    if (this.config.ttl !== undefined && now - this.lastAccess >= this.config.ttl * 1000) {
      return true;
    }
    return this.config.expiresAt !== undefined && Date.parse(this.config.expiresAt) <= now;
  }
}
