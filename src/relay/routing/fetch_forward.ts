import { type FetchedGroup, type GroupFetcher, MoqError } from "../../moq/mod.ts";
import { withDeadline } from "../../timers/mod.ts";
import { recordAttributes, SpanKind, traced } from "../../tracing/mod.ts";
import type { IncomingGroup } from "./upstream_track.ts";

/** Asks a broadcast's upstream session for one group of a track (a lite-05 FETCH). */
export type UpstreamFetch = (
  track: string,
  group: number,
  options: { readonly signal?: AbortSignal },
) => Promise<IncomingGroup>;

/** The FETCH of a route's source, bound to it; undefined when it cannot fetch. */
export function upstreamFetch(
  source: { fetch?: UpstreamFetch | undefined } | undefined,
): UpstreamFetch | undefined {
  const fetch = source?.fetch;
  return fetch && ((track, group, options) => fetch.call(source, track, group, options));
}

/** Options of {@link forwardFetches}. */
export interface ForwardFetchOptions {
  /** FETCHes of one track sent upstream at once (default 16); more wait their turn. */
  readonly maxInflight?: number;
  /** Longest wait for the upstream's answer, ms (default 10000). */
  readonly timeoutMs?: number;
  /** The track's broadcast, named on the `relay.upstream.fetch` spans (tracing on). */
  readonly broadcast?: string;
}

/**
 * What a relay's track does with a FETCH its ring of recent groups cannot
 * answer: it forwards it to the broadcast's upstream session (whichever
 * route `upstream` names at that moment), so a subscriber connected only to
 * the relay can fill a gap. Subscribers asking for the same group at once
 * share one upstream request, and at most `maxInflight` requests per track
 * are outstanding. The answer is passed on, not cached: the ring holds what
 * arrived live. No route, or an upstream that refuses, times out or fails,
 * answers "not there" (the subscriber's FETCH is refused as not found).
 *
 * @example
 * ```ts
 * const fetchMissing = forwardFetches(() => upstreamFetch(routes.get(path)?.source), "chat");
 * ```
 */
export function forwardFetches(
  upstream: () => UpstreamFetch | undefined,
  track: string,
  options: ForwardFetchOptions = {},
): GroupFetcher {
  const maxInflight = Math.max(1, options.maxInflight ?? 16);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const pending = new Map<number, Promise<FetchedGroup | undefined>>();
  const waiting: (() => void)[] = [];
  let inflight = 0;

  const ask = async (sequence: number): Promise<FetchedGroup | undefined> => {
    const fetch = upstream();
    if (!fetch) return undefined;
    while (inflight >= maxInflight) await new Promise<void>((resolve) => waiting.push(resolve));
    inflight++;
    try {
      // The signal cancels the request; the deadline also covers a peer that never answers
      // the TRACK a lite-05 FETCH starts with, which the signal does not reach.
      const attributes = recordAttributes(options.broadcast ?? "", track, sequence);
      const group = await traced(
        "relay.upstream.fetch",
        { kind: SpanKind.CLIENT, attributes },
        () =>
          withDeadline(
            fetch(track, sequence, { signal: AbortSignal.timeout(timeoutMs) }),
            timeoutMs,
            () => new MoqError("closed", `FETCH of group ${sequence}: no answer in time`),
          ),
      );
      const timestamp = group.exactTimestamp ?? group.timestamp ?? 0;
      return { frames: group.frames, timestamp };
    } catch {
      // Not found upstream, the upstream session ended, or it took too long.
      return undefined;
    } finally {
      inflight--;
      waiting.shift()?.();
    }
  };

  return (sequence, signal) => {
    let answer = pending.get(sequence);
    if (!answer) {
      answer = ask(sequence).finally(() => pending.delete(sequence));
      pending.set(sequence, answer);
    }
    // The requester may leave early; the shared request still finishes for the others.
    if (signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const gone = (): void => resolve(undefined);
      signal.addEventListener("abort", gone, { once: true });
      answer.then((group) => {
        signal.removeEventListener("abort", gone);
        resolve(group);
      });
    });
  };
}
