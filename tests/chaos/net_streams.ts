// What reached `@moq/net` beneath a raw subscriber: when each group's stream
// began (its header arrived) and ended. A missing group that reached it was
// dropped inside `@moq/net`, which drops a complete group unread once it is
// older than the max latency TRACK_INFO gave, aged from its first byte; one
// that never reached it was lost on the way. pg-pair 2079392861 lost hundreds
// of records the first way (group streams that took 30 s from their first
// byte to their last), which the report could not tell from the second.
// `@moq/net` has no hook for it, so its track producer's `subscribe` and
// `writeGroup` are wrapped, once, in the harness process only.
import * as Net from "@moq/net";

/** One group stream as `@moq/net` received it (performance.now() times). */
export interface StreamSpan {
  readonly began: number;
  ended: number | undefined;
}

const recorded = new WeakMap<object, Map<number, StreamSpan>>();
let lastSubscribed: Map<number, StreamSpan> | undefined;
let installed = false;

function install(): void {
  installed = true;
  type Method = (this: object, ...args: unknown[]) => unknown;
  const producer = Net.Track.Producer.prototype as unknown as Record<string, Method>;
  const subscribe = producer.subscribe!;
  producer.subscribe = function (...args) {
    let spans = recorded.get(this);
    if (!spans) recorded.set(this, spans = new Map());
    lastSubscribed = spans;
    return subscribe.apply(this, args);
  };
  // The wire layer writes each incoming group into the producer as its header arrives.
  const writeGroup = producer.writeGroup!;
  producer.writeGroup = function (...args) {
    const group = args[0] as { sequence: number; closed: PromiseLike<unknown> };
    const spans = recorded.get(this);
    if (spans && !spans.has(group.sequence)) {
      const span: StreamSpan = { began: performance.now(), ended: undefined };
      spans.set(group.sequence, span);
      const end = () => void (span.ended = performance.now());
      Promise.resolve(group.closed).then(end, end);
    }
    return writeGroup.apply(this, args);
  };
}

/**
 * Subscribes with `subscribe` (a `@moq/net` subscribe call, made at once) and
 * returns the group streams its track receives, by sequence.
 */
export function recordStreams<T>(
  subscribe: () => T,
): { result: T; streams: Map<number, StreamSpan> } {
  if (!installed) install();
  lastSubscribed = undefined;
  const result = subscribe();
  return { result, streams: lastSubscribed ?? new Map() };
}
