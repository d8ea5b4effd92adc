/**
 * The group bytes one session is sending, across all the subscriptions it
 * serves. Each subscription bounds its own (16 groups, 8 MiB), but a peer
 * chooses how many subscriptions it holds (1024 on an IETF session, several
 * to one track; a moq-lite one as many as the connection's streams), so a
 * peer that never reads pinned that bound once per subscription: 16 MiB each
 * on IETF, 2 GiB measured for 128 subscriptions of one session.
 */

/** Payload bytes one session sends at once across its subscriptions by default. */
export const SESSION_BYTES_IN_FLIGHT = 64 << 20;

/** A session's group bytes in flight, and a wake for subscriptions waiting for room. */
export class SessionSends {
  readonly #limit: () => number | undefined;
  #bytes = 0;
  #room: PromiseWithResolvers<void> | undefined;

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

  /** Counts `bytes` more in flight. */
  took(bytes: number): void {
    this.#bytes += bytes;
  }

  /** Counts `bytes` less in flight, and wakes whoever waits for room. */
  gave(bytes: number): void {
    this.#bytes -= bytes;
    const room = this.#room;
    this.#room = undefined;
    room?.resolve();
  }

  /** Resolves at the next {@linkcode gave}. */
  room(): Promise<void> {
    return (this.#room ??= Promise.withResolvers<void>()).promise;
  }
}
