/**
 * OpenTelemetry traces over Deno's built-in tracer: off unless the runtime
 * exports them (`OTEL_DENO=true` and the standard `OTEL_*` variables), and
 * then the only cost on a hot path is one check of {@link activeTracer}.
 *
 * The funnel → relay hop carries no trace context (moq-lite groups have no
 * headers): spans on both sides name the record with
 * {@link recordAttributes} instead, see docs/observability.md.
 *
 * @module
 */
export {
  activeContext,
  activeTracer,
  type Attributes,
  type AttributeValue,
  contextWith,
  type Span,
  type SpanIdentity,
  SpanKind,
  spanNow,
  spanOf,
  type SpanOptions,
  type SpanTime,
  type TraceContext,
  type Tracer,
} from "./tracer.ts";
export { failSpan, recordAttributes, traced, trackAttributes } from "./spans.ts";
