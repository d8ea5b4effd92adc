/**
 * The group bytes one session has handed to its transport that the
 * transport has not taken yet, across all the subscriptions it serves.
 * Each subscription bounds its own open streams (16 groups, 8 MiB), but a
 * peer chooses how many subscriptions it holds (1024 on an IETF session,
 * several to one track; a moq-lite one as many as the connection's
 * streams), so a peer that never reads pinned that bound once per
 * subscription: 16 MiB each on IETF, 2 GiB measured for 128 subscriptions
 * of one session.
 *
 * A write's bytes (payload and `FRAME_COST` a frame) count from when a
 * group's stream hands them to its writer until that write resolves: the
 * transport took them. Deno's QUIC (quinn) takes bytes only within the
 * peer's stream and connection flow-control credit and its own bounded send
 * buffer, and QMux's write resolves only once its STREAM frames were paid
 * for with the peer's credit and reached the socket, so what the transport
 * holds past this count is bounded by the transport, and this count bounds
 * the copies waiting for it. A stream starts, and writes its next frames,
 * only while the session has room ({@linkcode SessionSends.full}); a
 * subscriber that reads gives credit, writes resolve and bytes come back,
 * so a group left open (its bytes read) holds nothing here, and a stream
 * whose subscriber never reads holds its pending write (the bound working).
 *
 * One stream still goes past the bound: the session's oldest open stream of
 * a group still arriving ({@linkcode SessionSends.mayWrite}). A subscriber
 * that reads one stream at a time, oldest first, gives credit to that stream
 * only, while the newer streams it has not read yet each hold a pending
 * write: 64 streams of writes of 1 MiB reach the bound (measured), and the
 * stream it reads would wait for room only its own end could make. Each
 * stream has one write pending at most, so that costs one write past the
 * bound (a group's frames at most). It is not the exemption withdrawn
 * before: a stream left open whose bytes were taken holds nothing here, so
 * it stops no other stream.
 * Before, a stream's bytes counted from its start to its end, read or not:
 * a 62 MiB group never finished stopped the session's other groups for good,
 * and a live group's frames written after its start were not checked at
 * all (8 never-read subscriptions of 8 groups growing to 4 MiB: 180 MiB and
 * more). A peer relay's session has no bound (`limit()` is Infinity).
 */

/** Bytes one session has handed to its transport and not had taken, across its subscriptions, by default. */
export const SESSION_BYTES_IN_FLIGHT = 64 << 20;

/** A session's group bytes not taken by its transport yet, and a wake for streams waiting for room. */
export class SessionSends {
  readonly #limit: () => number | undefined;
  #bytes = 0;
  #room: PromiseWithResolvers<void> | undefined;
  // The streams of groups still arriving, oldest first (a Set keeps the order they came in).
  readonly #open = new Set<object>();

  /**
   * Room for `limit()` bytes at once (asked each time: a session's
   * admission may change it), {@linkcode SESSION_BYTES_IN_FLIGHT} when it
   * says undefined.
   */
  constructor(limit: () => number | undefined = () => undefined) {
    this.#limit = limit;
  }

  /** Bytes handed to the transport and not taken yet. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * True when a write (or a group's start) of `size` bytes must wait: one
   * always goes while nothing is pending, so the session holds at most its
   * bound, or one write alone.
   */
  full(size: number): boolean {
    return this.#bytes > 0 && this.#bytes + size > (this.#limit() ?? SESSION_BYTES_IN_FLIGHT);
  }

  /**
   * True when `stream`, one {@linkcode opened}, may write `size` bytes now:
   * while the session has room, and always for the oldest open stream.
   */
  mayWrite(stream: object, size: number): boolean {
    if (!this.full(size)) return true;
    for (const oldest of this.#open) return oldest === stream;
    return true;
  }

  /** `stream`, of a group still arriving, started: it is the newest. */
  opened(stream: object): void {
    this.#open.add(stream);
  }

  /** `stream` ended: the next oldest may go past the bound, so whoever waits is woken. */
  closed(stream: object): void {
    if (this.#open.delete(stream)) this.#wake();
  }

  /** Counts `bytes` more handed to the transport. */
  took(bytes: number): void {
    this.#bytes += bytes;
  }

  /** Counts `bytes` less (the transport took them, or the write failed), and wakes whoever waits for room. */
  gave(bytes: number): void {
    this.#bytes -= bytes;
    this.#wake();
  }

  #wake(): void {
    const room = this.#room;
    this.#room = undefined;
    room?.resolve();
  }

  /** Resolves at the next {@linkcode gave} or {@linkcode closed}. */
  room(): Promise<void> {
    return (this.#room ??= Promise.withResolvers<void>()).promise;
  }
}
