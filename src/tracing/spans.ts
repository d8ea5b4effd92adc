import { errorText } from "../error_text/mod.ts";
import { formatGroupId } from "../record/mod.ts";
import {
  activeTracer,
  type Attributes,
  contextWith,
  type Span,
  type SpanOptions,
} from "./tracer.ts";

/** Ends `span` as failed by `error` (status code 2 and an `exception` event). */
export function failSpan(span: Span, error: unknown, endTime?: number): void {
  span.recordException(error);
  span.setStatus({ code: 2, message: errorText(error) });
  span.end(endTime);
}

/**
 * Runs `work` inside a span when tracing is on, ending it when `work`
 * settles (failed when it throws); with tracing off, runs `work` alone.
 * The span is a child of the active one and is active while `work` runs,
 * so requests `work` makes upstream are its children.
 *
 * @example
 * ```ts
 * const group = await traced("relay.upstream.fetch", { attributes }, () => fetchGroup());
 * ```
 */
export async function traced<T>(
  name: string,
  options: SpanOptions,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const tracer = activeTracer();
  if (!tracer) return await work(undefined);
  const span = tracer.startSpan(name, options);
  try {
    const result = await Deno.telemetry.contextManager.with(contextWith(span), () => work(span));
    span.end();
    return result as T;
  } catch (error) {
    failSpan(span, error);
    throw error;
  }
}

/**
 * The attributes naming one record on both sides of the funnel → relay hop.
 * moq-lite carries no headers on groups, so a trace cannot continue across
 * it; these are the join key instead: the broadcast and track, the group
 * sequence, and the record id (`e000001-g00000000`: epoch 1, ledger
 * sequence = group sequence − 1), which the relay derives from the group
 * sequence the way the funnel numbers its groups.
 */
export function recordAttributes(broadcast: string, track: string, sequence: number): Attributes {
  return {
    "moq.broadcast": broadcast,
    "moq.track": track,
    "moq.group.sequence": sequence,
    ...(sequence > 0 ? { "sluice.record.id": formatGroupId({ epoch: 1, seq: sequence - 1 }) } : {}),
  };
}

/** The attributes naming a track (subscriptions, upstream requests). */
export function trackAttributes(broadcast: string, track: string): Attributes {
  return { "moq.broadcast": broadcast, "moq.track": track };
}
