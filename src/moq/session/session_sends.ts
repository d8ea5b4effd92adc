/**
 * The group bytes one session is sending, across all the subscriptions it
 * serves. Each subscription bounds its own (16 groups, 8 MiB), but a peer
 * chooses how many subscriptions it holds (1024 on an IETF session, several
 * to one track; a moq-lite one as many as the connection's streams), so a
 * peer that never reads pinned that bound once per subscription: 16 MiB each
 * on IETF, 2 GiB measured for 128 subscriptions of one session.
 *
 * Groups that grow after their stream started (cut-through: a relay forwards
 * a group while it still arrives) count as their frames are taken for
 * writing, and a stream takes more only while the session has room
 * ({@linkcode SessionSends.mayTake}). Before, the bound was checked only when
 * a stream started: 8 never-read subscriptions of 8 live groups that grew
 * from 1 KiB to 4 MiB had 180 to 251 MiB taken for writing (moq-lite, two
 * runs), or 64 MiB written and 64 KiB counted (IETF, which did not count
 * growth at all).
 *
 * Why waiting cannot deadlock: a stream that may not take holds no slot and
 * nothing another stream needs, except room, and the session's oldest open
 * stream never waits for room. It goes as far as its subscriber reads, ends
 * with its group, gives its bytes back, and the next oldest goes on; a
 * subscriber that reads its streams in any order that includes the oldest
 * one progresses (one that reads a stream at a time, oldest first, is the
 * strictest). So the session holds at most its bound plus what its oldest
 * stream took past it: one group, 64 MiB at most (a group's receive budget).
 * What a waiting stream has not taken stays in its group, which the track's
 * ring holds and, while it arrives, the publisher's receive budget bounds;
 * its subscription counts it (`GroupSend.arrived`) against its own 8 MiB.
 *
 * Why not reset the newest streams instead, as a slow subscriber's: Deno's
 * QUIC cannot reset a stream (its abort finishes it), so a native QUIC
 * subscriber of a flow-controlled track, promised every group whole, would
 * read a truncated group as whole. A peer relay's session has no bound
 * (`limit()` is Infinity): every stream may always take.
 */

/** Payload bytes one session sends at once across its subscriptions by default. */
export const SESSION_BYTES_IN_FLIGHT = 64 << 20;

/** A session's group bytes in flight, and a wake for subscriptions waiting for room. */
export class SessionSends {
  readonly #limit: () => number | undefined;
  #bytes = 0;
  #room: PromiseWithResolvers<void> | undefined;
  // The streams sending now, oldest first (a Set keeps the order they were added in).
  readonly #open = new Set<object>();

  /**
   * Room for `limit()` payload bytes at once (asked each time: a session's
   * admission may change it), {@linkcode SESSION_BYTES_IN_FLIGHT} when it
   * says undefined.
   */
  constructor(limit: () => number | undefined = () => undefined) {
    this.#limit = limit;
  }

  /** Bytes in flight now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** True when a group of `size` bytes must wait (one always goes while none is in flight). */
  full(size: number): boolean {
    return this.#bytes > 0 && this.#bytes + size > (this.#limit() ?? SESSION_BYTES_IN_FLIGHT);
  }

  /** True when `stream`, one {@linkcode opened}, may take `bytes` more (always for the oldest). */
  mayTake(stream: object, bytes: number): boolean {
    if (bytes <= 0 || this.#bytes + bytes <= (this.#limit() ?? SESSION_BYTES_IN_FLIGHT)) {
      return true;
    }
    for (const oldest of this.#open) return oldest === stream;
    return true;
  }

  /** `stream` started sending: it is the newest. */
  opened(stream: object): void {
    this.#open.add(stream);
  }

  /** `stream` ended; the next oldest may go past the bound, so whoever waits is woken. */
  closed(stream: object): void {
    if (this.#open.delete(stream)) this.#wake();
  }

  /** Counts `bytes` more in flight. */
  took(bytes: number): void {
    this.#bytes += bytes;
  }

  /** Counts `bytes` less in flight, and wakes whoever waits for room. */
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
