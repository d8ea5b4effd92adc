/**
 * How fast a QUIC session notices that its peer is gone (killed, cut off,
 * powered down: anything that sends no CONNECTION_CLOSE). A side that hears
 * nothing for its idle timeout closes the session; a side with nothing to
 * send sends a keep-alive every quarter of it, so a live peer on a working
 * link is never silent that long (four keep-alives or their acknowledgements
 * in a row would have to be lost). QUIC takes the smaller idle timeout of
 * the two sides, so either side's setting bounds how long a dead peer keeps
 * its routes and subscriptions.
 *
 * The idle timer restarts when a side sends its first keep-alive after the
 * last packet it received (RFC 9000, section 10.1), so a dead peer is
 * declared dead {@linkcode DEAD_PEER_MS} after its last packet: the idle
 * timeout plus one keep-alive interval.
 *
 * @module
 */

/** QUIC idle timeout of sessions between relays, and between a relay and its clients, ms. */
export const IDLE_TIMEOUT_MS = 1000;

/** The keep-alive interval for idle timeout `idleMs`: a quarter of it, at least 50 ms. */
export function keepAliveFor(idleMs: number): number {
  return Math.max(50, Math.floor(idleMs / 4));
}

/** How long after its last packet a dead peer is declared dead at the default idle timeout, ms. */
export const DEAD_PEER_MS: number = IDLE_TIMEOUT_MS + keepAliveFor(IDLE_TIMEOUT_MS);
