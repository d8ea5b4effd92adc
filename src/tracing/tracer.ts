/**
 * The slice of the OpenTelemetry API that sluice uses, over Deno's built-in
 * tracer (`Deno.telemetry`, typed `any` by Deno). No npm package: with
 * `OTEL_DENO=true` Deno exports the spans over OTLP itself.
 */

/** What a span is attached under: an OpenTelemetry context. */
export interface TraceContext {
  /** A copy of the context with `key` set to `value`. */
  setValue(key: symbol, value: unknown): TraceContext;
  /** The value under `key`, if any. */
  getValue(key: symbol): unknown;
}

/** A span's identity, as exported. */
export interface SpanIdentity {
  readonly traceId: string;
  readonly spanId: string;
}

/** Milliseconds since the Unix epoch, fractional: OpenTelemetry's TimeInput as a number. */
export type SpanTime = number;

/** An attribute value. */
export type AttributeValue = string | number | boolean;

/** A span's attributes. */
export type Attributes = Readonly<Record<string, AttributeValue>>;

/** A started span (OpenTelemetry's Span, as far as sluice uses it). */
export interface Span {
  /** The span's trace and span ids. */
  spanContext(): SpanIdentity;
  /** Adds or replaces one attribute. */
  setAttribute(key: string, value: AttributeValue): Span;
  /** Adds or replaces attributes. */
  setAttributes(attributes: Attributes): Span;
  /** Marks the span as failed (code 2) with a message. */
  setStatus(status: { code: number; message?: string }): Span;
  /** Adds an `exception` event. */
  recordException(exception: unknown): void;
  /** Renames the span. */
  updateName(name: string): Span;
  /** Ends the span, now or at `endTime`. */
  end(endTime?: SpanTime): void;
}

/** OpenTelemetry's SpanKind, in the API's numbering (OTLP's is one higher). */
export const SpanKind = { INTERNAL: 0, SERVER: 1, CLIENT: 2, PRODUCER: 3, CONSUMER: 4 } as const;

/** Options of a new span. */
export interface SpanOptions {
  readonly kind?: number;
  readonly attributes?: Attributes;
  readonly startTime?: SpanTime;
  /** Start a new trace even when a span is active. */
  readonly root?: boolean;
}

/** Starts spans: OpenTelemetry's Tracer, as far as sluice uses it. */
export interface Tracer {
  /** Starts a span under `context` (default: the active one). */
  startSpan(name: string, options?: SpanOptions, context?: TraceContext): Span;
}

/** The key under which a context holds its span (the one `@opentelemetry/api` uses). */
export const SPAN_KEY: symbol = Symbol.for("OpenTelemetry Context Key SPAN");

let tracer: Tracer | null | undefined;

/**
 * The tracer when the runtime exports spans (`OTEL_DENO=true`), else
 * undefined. Asked once: Deno's tracer throws on its first span when
 * OpenTelemetry is off, so callers check this instead and the hot path
 * costs one comparison with tracing off.
 */
export function activeTracer(): Tracer | undefined {
  if (tracer === undefined) tracer = probe();
  return tracer ?? undefined;
}

function probe(): Tracer | null {
  try {
    const found = Deno.telemetry.tracerProvider.getTracer("sluice") as Tracer;
    // A span never ended is never exported: this one only tells whether spans can start.
    found.startSpan("sluice.probe");
    return found;
  } catch {
    return null;
  }
}

/** The active context (the HTTP server span's, inside a `Deno.serve` handler). */
export function activeContext(): TraceContext {
  return Deno.telemetry.contextManager.active() as TraceContext;
}

/** The span a context holds, if any. */
export function spanOf(context: TraceContext): Span | undefined {
  return context.getValue(SPAN_KEY) as Span | undefined;
}

/** A context whose span is `span`: spans started under it are its children. */
export function contextWith(span: Span, context: TraceContext = activeContext()): TraceContext {
  return context.setValue(SPAN_KEY, span);
}

/** Now, as a span time (ms since the epoch, sub-millisecond). */
export function spanNow(): SpanTime {
  return performance.timeOrigin + performance.now();
}
