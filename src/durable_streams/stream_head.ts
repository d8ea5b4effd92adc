import { type EntryMeta, parseMeta, type StreamConfig } from "./meta.ts";

/** What an idempotent producer last appended in a stream. */
export interface ProducerState {
  readonly epoch: number;
  readonly seq: number;
}

/**
 * Most idempotent producers a stream remembers. Each append may name a new
 * Producer-Id, so without a bound a writer could grow one stream's state
 * (and every funnel's copy of it) without limit. Past it, the producer whose
 * last append is oldest is forgotten: it is then treated as never seen, so
 * its next append must start a new epoch at Producer-Seq 0 (409 otherwise),
 * and nothing it retries is stored twice.
 */
export const MAX_PRODUCERS = 1024;

/** A track never created through the protocol (records posted under `/tracks/`) reads as JSON. */
export const PLAIN_TRACK: StreamConfig = { type: "application/json" };

/**
 * The writer state of one stream as its committed entries leave it: which
 * entry created it and how, whether it is closed (and by which producer
 * append), each idempotent producer's last append, and the last
 * `Stream-Seq`. A head may sit on a parent whose producers it sees but does
 * not change: a batch's scratch, thrown away when the batch does not commit.
 */
export class StreamHead {
  /** Ledger sequence of the creating entry; -1 for a track created without one. */
  readonly created: number;
  /** The configuration of the creating entry (a plain track's: application/json). */
  readonly config: StreamConfig;
  /** Closed: no more appends. */
  closed = false;
  /** The producer append that closed it, if one did. */
  closer: readonly [string, number, number] | undefined;
  /** The last `Stream-Seq` appended. */
  streamSeq: string | undefined;
  readonly #producers = new Map<string, ProducerState>();
  readonly #parent: StreamHead | undefined;

  /** A stream created by entry `created` with `config`. */
  constructor(created: number, config: StreamConfig, parent?: StreamHead) {
    this.created = created;
    this.config = config;
    this.#parent = parent;
  }

  /** A scratch head over this one: same state, and changes that stay in the scratch. */
  child(): StreamHead {
    const head = new StreamHead(this.created, this.config, this);
    head.closed = this.closed;
    head.closer = this.closer;
    head.streamSeq = this.streamSeq;
    return head;
  }

  /** A producer's last append, if it made one. */
  producer(id: string): ProducerState | undefined {
    return this.#producers.get(id) ?? this.#parent?.producer(id);
  }

  /**
   * Records a producer's append, as the most recent; past
   * {@link MAX_PRODUCERS}, the least recently appending one is forgotten.
   */
  setProducer(id: string, state: ProducerState): void {
    this.#producers.delete(id);
    this.#producers.set(id, state);
    if (this.#producers.size > MAX_PRODUCERS) {
      this.#producers.delete(this.#producers.keys().next().value!);
    }
  }

  /** Takes in one append's metadata (not a creation or deletion). */
  apply(meta: EntryMeta): void {
    if (meta.closed && !this.closed) {
      this.closed = true;
      this.closer = meta.producer;
    }
    if (meta.producer) {
      this.setProducer(meta.producer[0], { epoch: meta.producer[1], seq: meta.producer[2] });
    }
    if (meta.seq !== undefined) this.streamSeq = meta.seq;
  }
}

/**
 * The head after one more entry, oldest first: a creating entry starts a new
 * stream, a deletion leaves none (undefined), anything else updates `head`
 * in place (a record posted to a deleted stream's track changes nothing).
 */
export function foldEntry(
  head: StreamHead | undefined,
  entry: { readonly seq: number; readonly meta?: string | undefined },
): StreamHead | undefined {
  const meta = parseMeta(entry.meta);
  if (meta.create) {
    const created = new StreamHead(entry.seq, meta.create);
    created.apply(meta);
    return created;
  }
  if (meta.deleted) return undefined;
  head?.apply(meta);
  return head;
}
