/**
 * QUIC stream ids (RFC 9000 §2.1): `index * 4 + (uni ? 2 : 0) + (server ? 1 : 0)`.
 * The WebSocket client is the QUIC client. Arithmetic, not bit operations,
 * so ids above 2^32 stay exact.
 */

/** Which side opens a stream, and its direction. */
export interface StreamKind {
  /** Unidirectional. */
  readonly uni: boolean;
  /** Opened by the server (the side that accepted the WebSocket). */
  readonly server: boolean;
}

/** The id of the `index`-th stream of a kind. */
export function streamId(index: number, kind: StreamKind): number {
  return index * 4 + (kind.uni ? 2 : 0) + (kind.server ? 1 : 0);
}

/** A stream id's kind. */
export function kindOf(id: number): StreamKind {
  const low = id % 4;
  return { uni: low >= 2, server: low % 2 === 1 };
}

/** A stream id's index among streams of its kind. */
export function indexOf(id: number): number {
  return Math.floor(id / 4);
}

/**
 * Remembers which peer-opened stream indexes were ever opened, so a late
 * frame for a finished stream is ignored rather than reopening it. Opening
 * index N implicitly opens every lower one (RFC 9000 §3.2); those not yet
 * seen are kept as pending (at most the stream limit's window of them).
 */
export class OpenedStreams {
  #next = 0;
  readonly #pending = new Set<number>();

  /** "new": first sight of this index; "finished": it was seen and is gone. */
  classify(index: number): "new" | "finished" {
    if (index >= this.#next || this.#pending.has(index)) return "new";
    return "finished";
  }

  /** Records that `index` is now open. */
  open(index: number): void {
    if (index < this.#next) {
      this.#pending.delete(index);
      return;
    }
    for (let i = this.#next; i < index; i++) this.#pending.add(i);
    this.#next = index + 1;
  }
}
