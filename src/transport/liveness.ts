/**
 * How fast a dialed QUIC session that carries routes notices that the other
 * side is gone (killed, cut off, powered down: anything that sends no
 * CONNECTION_CLOSE): a relay's sessions to its peers and a funnel's session
 * to its relay. A side that hears nothing for the idle timeout closes the
 * session; the dialing side sends a keep-alive every quarter of it, so a
 * live peer on a working link is never silent that long (four keep-alives
 * or their acknowledgements in a row would have to be lost). QUIC takes the
 * smaller idle timeout of the two sides, so the dialer's short one applies
 * to both: a relay notices a dead funnel or peer as fast as they notice it.
 *
 * The idle timer restarts when a side sends its first keep-alive after the
 * last packet it received (RFC 9000, section 10.1), so a dead peer is
 * declared dead {@linkcode DEAD_PEER_MS} after its last packet: the idle
 * timeout plus one keep-alive interval.
 *
 * Listeners keep a long idle timeout (30 s): with a 1 s one, sessions of
 * clients on an overloaded host (the fan-out benchmark's 100 subscribers on
 * two cores) were taken for dead while their packets waited in full socket
 * buffers.
 *
 * @module
 */

/** QUIC idle timeout of the sessions a relay dials to its peers and a funnel to its relay, ms. */
export const IDLE_TIMEOUT_MS = 1000;

/** The keep-alive interval for idle timeout `idleMs`: a quarter of it, at least 50 ms. */
export function keepAliveFor(idleMs: number): number {
  return Math.max(50, Math.floor(idleMs / 4));
}

/** How long after its last packet a dead peer is declared dead at the default idle timeout, ms. */
export const DEAD_PEER_MS: number = IDLE_TIMEOUT_MS + keepAliveFor(IDLE_TIMEOUT_MS);
