import type { Ledger } from "../ledger/mod.ts";
import { formatOffset } from "./offsets.ts";
import type { StreamRegistry } from "./registry.ts";
import { H, SECURITY_HEADERS } from "./headers.ts";
import type { StreamState } from "./stream_state.ts";

/** What the request handlers share. */
export interface StreamContext {
  readonly ledger: Ledger;
  readonly registry: StreamRegistry;
  /** Millisecond clock (TTL, cursors). */
  readonly now: () => number;
  /** How long a long-poll waits for data, ms. */
  readonly longPollMs: number;
  /** How long an SSE response stays open, ms. */
  readonly sseMs: number;
  /** Credentials are checked: cached reads are `private`, not `public`. */
  readonly authenticated: boolean;
  /** Most bytes one append may carry. */
  readonly maxAppendBytes: number;
  /** The configured origin of the funnel for `Location` ("" for a path). */
  readonly publicOrigin: string;
}

/** Headers for an answer about a stream: security headers plus `extra`. */
export function answerHeaders(extra: Record<string, string> = {}): Headers {
  const headers = new Headers(SECURITY_HEADERS);
  for (const [k, v] of Object.entries(extra)) headers.set(k, v);
  return headers;
}

/** An empty answer with security headers. */
export function answer(status: number, extra: Record<string, string> = {}): Response {
  return new Response(null, { status, headers: answerHeaders(extra) });
}

/** The offset text of a position (never below the first offset). */
export function offsetText(position: number): string {
  return formatOffset(Math.max(0, position));
}

/** Stream-Next-Offset, and Stream-Closed when the stream is closed. */
export function tailHeaders(state: StreamState, position: number): Record<string, string> {
  const out: Record<string, string> = { [H.nextOffset]: offsetText(position) };
  if (state.closed) out[H.closed] = "true";
  return out;
}
