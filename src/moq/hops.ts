/**
 * Hop ids: each endpoint's origin id and the hop lists announcements carry,
 * which is how a mesh of relays keeps announcements from going round in
 * circles.
 *
 * @module
 */

/**
 * A random non-zero hop id. The wire field holds 62 bits, but @moq/lite
 * reads hop ids and @moq/net its peer's SETUP origin as JavaScript numbers,
 * so ids are drawn below 2^53 to reach those peers exactly.
 */
export function randomHopId(): bigint {
  const b = crypto.getRandomValues(new Uint32Array(2));
  return ((BigInt((b[0] ?? 0) & 0x1f_ffff) << 32n) | BigInt(b[1] ?? 0)) || 1n;
}

/**
 * Whether an announcement whose hop list (origin first) is `hops` may be
 * offered to a peer that asked to exclude `excludeHop`, by the endpoint
 * whose own id is `own`: never when the list holds the excluded id (the
 * announcement came through that peer) or when the peer excluded our own
 * id (it is us). 0 excludes nothing.
 */
export function offerable(hops: readonly bigint[], excludeHop: bigint, own: bigint): boolean {
  if (excludeHop === 0n) return true;
  return excludeHop !== own && !hops.includes(excludeHop);
}

/** Whether a received announcement's full hop list shows it already passed through `own` (a loop). */
export function loopsThrough(hops: readonly bigint[], own: bigint): boolean {
  return own !== 0n && hops.includes(own);
}
