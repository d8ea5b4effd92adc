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

/** How many ranks a subscription's group streams go through before they start again at 0. */
export const RANKS = 1 << 21;

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
