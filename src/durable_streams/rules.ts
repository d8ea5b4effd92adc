import type { ProducerHeaders } from "./headers.ts";
import type { StreamConfig } from "./meta.ts";
import { checkProducer, type ProducerVerdict } from "./producer.ts";
import type { StreamHead } from "./stream_head.ts";

/** What a write asks of its stream; the gate checks it when the draft commits. */
export type Intent =
  | {
    readonly kind: "create";
    /** The creating entry of an expired stream this one replaces. */
    readonly replaces: number | undefined;
  }
  | {
    readonly kind: "append";
    /** The creating entry of the stream the request was checked against. */
    readonly created: number;
    readonly closes: boolean;
    readonly hasBody: boolean;
    readonly producer: ProducerHeaders | undefined;
    readonly streamSeq: string | null;
  }
  | { readonly kind: "delete"; readonly created: number }
  /** A read recorded for the sliding TTL: admitted while the stream is the one read. */
  | { readonly kind: "touch"; readonly created: number }
  /** Retention ends an expired stream: only if nothing was committed after `newest`. */
  | { readonly kind: "expire"; readonly created: number; readonly newest: number };

/** Why the gate refused a write. `tail` is the sequence of the stream's newest entry then. */
export type Refused =
  /** The stream was replaced (deleted and created again) since the request was checked. */
  | { readonly kind: "again" }
  | { readonly kind: "absent" }
  | {
    readonly kind: "exists";
    readonly created: number;
    readonly config: StreamConfig;
    readonly closed: boolean;
    readonly tail: number;
  }
  /** `accepted`: the close asked for is the one that closed it (204), not a late append (409). */
  | { readonly kind: "closed"; readonly tail: number; readonly accepted: boolean }
  | {
    readonly kind: "producer";
    readonly verdict: Exclude<ProducerVerdict, { kind: "accept" }>;
    readonly tail: number;
  }
  | { readonly kind: "seq" };

/**
 * The protocol's rules for one write against the stream as every entry
 * committed before it leaves it (`head`; undefined once deleted), where the
 * write would be stored as `seq`: undefined admits it.
 */
export function decide(
  head: StreamHead | undefined,
  intent: Intent,
  seq: number,
): Refused | undefined {
  switch (intent.kind) {
    case "create":
      // An empty track (made for this PUT, or by a PUT under /tracks/) takes any stream.
      if (!head || seq === 0 || head.created === intent.replaces) return undefined;
      return {
        kind: "exists",
        created: head.created,
        config: head.config,
        closed: head.closed,
        tail: seq - 1,
      };
    case "delete":
      if (!head) return { kind: "absent" };
      return head.created === intent.created ? undefined : { kind: "again" };
    case "touch":
      return head?.created === intent.created ? undefined : { kind: "again" };
    case "expire":
      return head?.created === intent.created && seq === intent.newest + 1
        ? undefined
        : { kind: "again" };
    case "append":
      return decideAppend(head, intent, seq);
  }
}

function decideAppend(
  head: StreamHead | undefined,
  intent: Extract<Intent, { kind: "append" }>,
  seq: number,
): Refused | undefined {
  if (!head) return { kind: "absent" };
  if (head.created !== intent.created) return { kind: "again" };
  const producer = intent.producer;
  if (head.closed) {
    const closer = head.closer;
    const sameCloser = producer !== undefined && closer !== undefined &&
      closer[0] === producer.id && closer[1] === producer.epoch && closer[2] === producer.seq;
    return {
      kind: "closed",
      tail: seq - 1,
      accepted: sameCloser || (!intent.hasBody && intent.closes),
    };
  }
  if (producer) {
    const verdict = checkProducer(head.producer(producer.id), producer);
    if (verdict.kind !== "accept") return { kind: "producer", verdict, tail: seq - 1 };
  }
  const asked = intent.streamSeq;
  if (asked !== null && head.streamSeq !== undefined && asked <= head.streamSeq) {
    return { kind: "seq" };
  }
  return undefined;
}
