import type { ProducerHeaders } from "./headers.ts";
import type { ProducerState } from "./stream_head.ts";

/** What the producer rules decide for one append. */
export type ProducerVerdict =
  | { readonly kind: "accept" }
  | { readonly kind: "duplicate"; readonly state: ProducerState }
  | { readonly kind: "stale"; readonly epoch: number }
  | { readonly kind: "gap"; readonly expected: number; readonly received: number }
  | { readonly kind: "bad-epoch-start" };

/**
 * The idempotent producer rules (PROTOCOL.md 5.2.1): an older epoch is
 * fenced, a newer one must start at seq 0, a seen seq is a duplicate and a
 * skipped one a gap. A producer never seen starts anywhere at seq 0.
 */
export function checkProducer(
  known: ProducerState | undefined,
  asked: ProducerHeaders,
): ProducerVerdict {
  if (!known) {
    return asked.seq === 0 ? { kind: "accept" } : { kind: "gap", expected: 0, received: asked.seq };
  }
  if (asked.epoch < known.epoch) return { kind: "stale", epoch: known.epoch };
  if (asked.epoch > known.epoch) {
    return asked.seq === 0 ? { kind: "accept" } : { kind: "bad-epoch-start" };
  }
  if (asked.seq <= known.seq) return { kind: "duplicate", state: known };
  if (asked.seq === known.seq + 1) return { kind: "accept" };
  return { kind: "gap", expected: known.seq + 1, received: asked.seq };
}
