import type { TrackLedger } from "../ledger/mod.ts";
import type { TrackPath } from "../path/mod.ts";
import type { StreamGate } from "./gate.ts";
import { positionOf, type Segment } from "./lineage.ts";
import type { StreamConfig } from "./meta.ts";
import { isJsonType } from "./content_type.ts";
import { formatMeta } from "./meta.ts";

/**
 * One stream as readers see it: its configuration and where its data lies
 * in the ledger, fixed for the stream's life, and its track's gate for what
 * changes (closure, the last access).
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
  /** The track's writer state and the gate its writes commit through. */
  readonly gate: StreamGate;

  /** Creates the state; `segments` must end with the stream's own. */
  constructor(init: {
    path: TrackPath;
    name: string;
    track: TrackLedger;
    config: StreamConfig;
    created: number;
    segments: readonly Segment[];
    gate: StreamGate;
  }) {
    this.path = init.path;
    this.name = init.name;
    this.track = init.track;
    this.config = init.config;
    this.created = init.created;
    this.segments = init.segments;
    this.gate = init.gate;
  }

  /** Closed, as readers see it: the closing entry is committed. */
  get closed(): boolean {
    const head = this.gate.head;
    return head !== undefined && head.created === this.created && head.closed;
  }

  /** The stream's own segment. */
  get own(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  /** True for `application/json` streams (message boundaries, arrays). */
  get json(): boolean {
    return isJsonType(this.config.type);
  }

  /**
   * Position of the stream's end: after its newest committed entry (the gate
   * may have read entries of other funnels before this process is told of them).
   */
  tail(): number {
    const newest = Math.max(this.track.newest?.seq ?? -1, this.gate.seen);
    return positionOf(this.own, Math.max(newest, this.created));
  }

  /** Position of the stream's start. */
  start(): number {
    return this.segments[0]!.base;
  }

  /** A read or write now: the sliding TTL counts from here. */
  touch(now: number): void {
    this.gate.touch(now);
  }

  /**
   * A read now. Under a sliding TTL it is also recorded in the ledger (an
   * entry without data), at most once per half TTL (and per second), so another funnel, a
   * restart and the retention pass count the TTL from it too.
   */
  read(now: number): void {
    this.touch(now);
    const ttl = this.config.ttl;
    if (ttl === undefined || !this.gate.claimRecord(now, ttl)) return;
    const draft = { meta: formatMeta({ touch: true })! };
    // Best effort: a read that fails to record is still answered; the next one records.
    this.gate.commit(this.track, draft, { kind: "touch", created: this.created }).catch(() => {});
  }

  /** True once the TTL or the absolute expiry has passed. */
  expired(now: number): boolean {
    const ttl = this.config.ttl;
    if (ttl !== undefined && now - this.gate.lastAccess >= ttl * 1000) return true;
    return this.config.expiresAt !== undefined && Date.parse(this.config.expiresAt) <= now;
  }
}
