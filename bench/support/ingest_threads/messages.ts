/**
 * Messages between the ingest workers and the main thread of the
 * multi-threaded ingest experiment (`server.ts`). Records and answers travel
 * in flat arrays, batched: one structured clone per batch instead of one per
 * record. A worker keeps one records message in flight and gathers what
 * arrives meanwhile (each request is its own task, so a per-turn flush would
 * send them one by one); the main thread's next answers message says it
 * took the batch.
 */

/** Main → worker, once: where to listen, and the key set when auth is on. */
export interface StartMessage {
  readonly kind: "start";
  readonly port: number;
  readonly keys: string | undefined;
}

/** Main → worker: answers to forwarded records, {@link ANSWER_STRIDE} slots each. */
export interface AnswersMessage {
  readonly kind: "answers";
  /** id, status, body, extra headers (or null), repeated. */
  readonly items: readonly unknown[];
  /** Records messages taken since the previous answers message. */
  readonly received: number;
}

/** Worker → main. */
export type FromWorker =
  | { readonly kind: "listening" }
  | {
    readonly kind: "records";
    /** id, request URL, sender or null, rate-limit key, payload, idempotency key or null, repeated. */
    readonly items: readonly unknown[];
  };

/** Slots per record in a records message. */
export const RECORD_STRIDE = 6;
/** Slots per answer in an answers message. */
export const ANSWER_STRIDE = 4;

/**
 * Calls `flush` once per turn, after the promise reactions of the current
 * one have settled (a few hops, so answers resolved together share a batch).
 */
export function batcher(flush: () => void): () => void {
  let scheduled = false;
  const run = (): void => {
    scheduled = false;
    flush();
  };
  return () => {
    if (scheduled) return;
    scheduled = true;
    Promise.resolve().then().then().then().then(run);
  };
}
