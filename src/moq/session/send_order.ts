/** moq-lite's send order as QUIC stream priorities (higher is sent first). */

// Priority takes the bits from 22 up, a group's rank within its subscription the signed 21 bits
// below, so every rank of a priority stays above every rank of a lower one, and 255 << 22 plus the
// highest rank stays within QUIC's i32.
const PRIORITY_SHIFT = 22;

/**
 * The send order of control streams (setup, announcements, subscriptions and
 * their answers, requests): before every group stream whatever its priority,
 * so a new subscription is answered while video fills the link. The largest
 * group order (255 << 22 plus the highest rank) stays below it.
 */
export const CONTROL_SEND_ORDER = 2 ** 31 - 1;

/**
 * How many ranks a subscription's group streams have: a stream's rank is its
 * place counted from a base, and the base moves on (see {@linkcode rebase})
 * before a place would pass the last rank.
 */
export const RANKS = 1 << 21;

/**
 * The base that ranks count from once the next place reached the last rank:
 * the place of the oldest stream still open (`oldest`), so every open stream
 * keeps its rank's order once reordered and the next ones rank after them,
 * but never more than half the ranks back, so a stream left open that long
 * (a live group whose publisher stalled) cannot make the base move at every
 * stream; it and any older share the first rank.
 */
export function rebase(next: number, oldest: number | undefined): number {
  return Math.max(oldest ?? next, next - RANKS / 2);
}

/** The rank (0..RANKS - 1) of the stream at `place` counted from `base` (see {@linkcode rebase}). */
export function rankOf(place: number, base: number): number {
  return Math.min(RANKS - 1, Math.max(0, place - base));
}

/**
 * The send order of a group stream at subscriber priority `priority`
 * (0..255) and `rank` within its subscription (-RANKS < rank < RANKS):
 * higher priorities go first across the session's subscriptions, higher
 * ranks first within one. Priority 0 at rank 0 is order 0, which spares the
 * transport an operation per stream.
 */
export function sendOrder(priority: number, rank = 0): number {
  return priority * (1 << PRIORITY_SHIFT) + rank;
}
