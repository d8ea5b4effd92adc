// A small OTLP/HTTP receiver for tests: accepts /v1/traces in the JSON
// protocol (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and keeps every span with
// its service's name; logs and metrics are acknowledged and dropped.

/** One received span, flattened. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: Record<string, string | number | boolean>;
  readonly status: number;
}

/** The receiver, its endpoint and the spans so far. */
export interface OtlpReceiver extends AsyncDisposable {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string;
  readonly spans: ReceivedSpan[];
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: { key: string; value: OtlpValue }[];
  status?: { code?: number };
}

interface OtlpTraces {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: OtlpValue }[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

function valueOf(v: OtlpValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  return v.boolValue ?? "";
}

function attributesOf(list: { key: string; value: OtlpValue }[] = []) {
  return Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));
}

/** Starts the receiver on a free loopback port. */
export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (req.method === "POST" && path === "/v1/traces") {
      const body = await req.json() as OtlpTraces;
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attributesOf(rs.resource?.attributes)["service.name"] ?? "");
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              service,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? "",
              name: s.name,
              kind: s.kind,
              startNs: BigInt(s.startTimeUnixNano),
              endNs: BigInt(s.endTimeUnixNano),
              attributes: attributesOf(s.attributes),
              status: s.status?.code ?? 0,
            });
          }
        }
      }
    } else {
      await req.body?.cancel();
    }
    return new Response("{}", { headers: { "content-type": "application/json" } });
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}`,
    spans,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}
