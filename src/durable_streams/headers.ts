import { HttpProblem } from "../http/mod.ts";

/** Response and request header names of the protocol. */
export const H = {
  nextOffset: "stream-next-offset",
  upToDate: "stream-up-to-date",
  closed: "stream-closed",
  cursor: "stream-cursor",
  ttl: "stream-ttl",
  expiresAt: "stream-expires-at",
  seq: "stream-seq",
  forkedFrom: "stream-forked-from",
  forkOffset: "stream-fork-offset",
  forkSubOffset: "stream-fork-sub-offset",
  producerId: "producer-id",
  producerEpoch: "producer-epoch",
  producerSeq: "producer-seq",
  expectedSeq: "producer-expected-seq",
  receivedSeq: "producer-received-seq",
  sseEncoding: "stream-sse-data-encoding",
} as const;

/** `Stream-Closed: true` (any case) closes; any other value is as if absent. */
export function closedHeader(headers: Headers): boolean {
  return headers.get(H.closed)?.trim().toLowerCase() === "true";
}

/** `Stream-TTL`: a non-negative decimal integer without sign, leading zeros or fraction. */
export function ttlHeader(headers: Headers): number | undefined {
  const text = headers.get(H.ttl);
  if (text === null) return undefined;
  if (!/^(0|[1-9]\d{0,15})$/.test(text.trim())) {
    throw new HttpProblem(400, `Stream-TTL must be a whole number of seconds, got "${text}"`);
  }
  return Number(text.trim());
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** `Stream-Expires-At`: an RFC 3339 timestamp. */
export function expiresAtHeader(headers: Headers): string | undefined {
  const text = headers.get(H.expiresAt);
  if (text === null) return undefined;
  if (!RFC3339.test(text.trim()) || Number.isNaN(Date.parse(text.trim()))) {
    throw new HttpProblem(400, `Stream-Expires-At must be an RFC 3339 time, got "${text}"`);
  }
  return text.trim();
}

/** An idempotent producer's headers, all three or none. */
export interface ProducerHeaders {
  readonly id: string;
  readonly epoch: number;
  readonly seq: number;
}

/** Longest Producer-Id, in characters: it is kept per stream and written with every append. */
export const MAX_PRODUCER_ID = 256;

/** Reads Producer-Id, -Epoch and -Seq: all or none (400 otherwise), integers up to 2^53-1. */
export function producerHeaders(headers: Headers): ProducerHeaders | undefined {
  const id = headers.get(H.producerId);
  const epoch = headers.get(H.producerEpoch);
  const seq = headers.get(H.producerSeq);
  if (id === null && epoch === null && seq === null) return undefined;
  if (id === null || epoch === null || seq === null) {
    throw new HttpProblem(400, "Producer-Id, Producer-Epoch and Producer-Seq go together");
  }
  if (id.trim() === "") throw new HttpProblem(400, "Producer-Id must not be empty");
  if (id.length > MAX_PRODUCER_ID) {
    throw new HttpProblem(400, `Producer-Id must be at most ${MAX_PRODUCER_ID} characters`);
  }
  return { id, epoch: counter(epoch, "Producer-Epoch"), seq: counter(seq, "Producer-Seq") };
}

function counter(text: string, name: string): number {
  const value = Number(text.trim());
  if (!/^\d{1,16}$/.test(text.trim()) || !Number.isSafeInteger(value)) {
    throw new HttpProblem(400, `${name} must be an integer from 0 to 2^53-1, got "${text}"`);
  }
  return value;
}

/**
 * Headers every stream response carries (browser safety, Section 12.7): no
 * type sniffing, and a policy under which a stream's bytes opened as a page
 * load nothing, run nothing and get an opaque origin.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "cross-origin-resource-policy": "cross-origin",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
};
