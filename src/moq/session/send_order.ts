/** moq-lite's send order as QUIC stream priorities (higher is sent first). */

// Priority takes the bits above 22, so a demoted stream (one less) stays above
// every stream of a lower priority, and 255 << 22 stays within QUIC's i32.
const PRIORITY_SHIFT = 22;

/**
 * The send order of a subscription's group streams at subscriber priority
 * `priority` (0..255): higher priorities go first across the session's
 * subscriptions. Priority 0 is order 0, which spares the transport an
 * operation per stream.
 */
export function sendOrder(priority: number): number {
  return priority * (1 << PRIORITY_SHIFT);
}

/**
 * The order of a stream that yields to a newer group of its own
 * subscription (newest first): still above every lower priority.
 */
export function yieldingOrder(priority: number): number {
  return sendOrder(priority) - 1;
}
