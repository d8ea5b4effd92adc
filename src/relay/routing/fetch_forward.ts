import { type FetchedGroup, type GroupFetcher, LiveFrames, MoqError } from "../../moq/mod.ts";
import { systemTimers, type Timers, withDeadline } from "../../timers/mod.ts";
import { recordAttributes, SpanKind, traced } from "../../tracing/mod.ts";
import { ended, type IncomingGroup } from "./upstream_track.ts";

/**
 * Asks a broadcast's upstream session for one group of a track (a lite-05
 * FETCH); with `partial`, a group still being written comes at its first
 * frame, `live` following the rest.
 */
export type UpstreamFetch = (
  track: string,
  group: number,
  options: { readonly signal?: AbortSignal; readonly partial?: boolean },
) => Promise<IncomingGroup>;

/** The FETCH of a route's source, bound to it; undefined when it cannot fetch. */
export function upstreamFetch(
  source: { fetch?: UpstreamFetch | undefined } | undefined,
): UpstreamFetch | undefined {
  const fetch = source?.fetch;
  return fetch && ((track, group, options) => fetch.call(source, track, group, options));
}

/**
 * Longest wait for an upstream's answer to a forwarded FETCH, ms: for its
 * first frame, then for each next frame or the end of a group still being
 * written. Twice a funnel's own storage deadline (STORAGE_DEADLINE_MS,
 * 5 s): a funnel answers a FETCH past its cache from its ledger, whose read
 * may take up to 5 s and still succeed, so a relay giving up at 5 s would
 * turn a slow but good answer into "not found" (and a repair into a lost
 * group); the margin also covers the round trips of the hops in between.
 */
export const FETCH_FORWARD_TIMEOUT_MS = 10_000;

/** Options of {@link forwardFetches}. */
export interface ForwardFetchOptions {
  /** FETCHes of one track sent upstream at once (default 16); more wait their turn. */
  readonly maxInflight?: number;
  /**
   * Longest wait for the upstream's answer, ms (default
   * {@link FETCH_FORWARD_TIMEOUT_MS}): for its first frame, and then for
   * each next frame or the end of a group still being written.
   */
  readonly timeoutMs?: number;
  /** Timers of those waits (default the global ones; tests pass a clock they move). */
  readonly timers?: Timers;
  /** The track's broadcast, named on the `relay.upstream.fetch` spans (tracing on). */
  readonly broadcast?: string;
}

/**
 * What a relay's track does with a FETCH its ring of recent groups cannot
 * answer: it forwards it to the broadcast's upstream session (whichever
 * route `upstream` names at that moment), so a subscriber connected only to
 * the relay can fill a gap. A group the upstream is still writing is passed
 * on from its first frame, each frame as it arrives, and ends (or is reset)
 * as the upstream's does; one that sends nothing for `timeoutMs` is reset.
 * Subscribers asking for the same group while it is being answered share
 * one upstream request, and at most `maxInflight` requests per track are
 * outstanding (a group still arriving holds its place until it ended). The
 * answer is passed on, not cached: the ring holds what arrived live. No
 * route, or an upstream that refuses, times out or fails, answers "not
 * there" (the subscriber's FETCH is refused as not found).
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
  const timeoutMs = options.timeoutMs ?? FETCH_FORWARD_TIMEOUT_MS;
  const timers = options.timers ?? systemTimers;
  const pending = new Map<number, Promise<FetchedGroup | undefined>>();
  const waiting: (() => void)[] = [];
  let inflight = 0;

  const release = (): void => {
    inflight--;
    waiting.shift()?.();
  };

  const ask = async (sequence: number): Promise<FetchedGroup | undefined> => {
    const fetch = upstream();
    if (!fetch) return undefined;
    while (inflight >= maxInflight) await new Promise<void>((resolve) => waiting.push(resolve));
    inflight++;
    // Cancels the upstream request: when it takes too long, before or after its first frame.
    const cancel = new AbortController();
    let following = false;
    try {
      // The deadline also covers a peer that never answers the TRACK a lite-05 FETCH starts
      // with, which cancelling does not reach.
      const attributes = recordAttributes(options.broadcast ?? "", track, sequence);
      const group = await traced(
        "relay.upstream.fetch",
        { kind: SpanKind.CLIENT, attributes },
        () =>
          withDeadline(
            fetch(track, sequence, { signal: cancel.signal, partial: true }),
            timeoutMs,
            () => new MoqError("closed", `FETCH of group ${sequence}: no answer in time`),
            () => {},
            timers,
          ),
      );
      const timestamp = group.exactTimestamp ?? group.timestamp ?? 0;
      if (!group.live) return { frames: group.frames, timestamp };
      following = true;
      follow(group.live, cancel, timeoutMs, timers).finally(release);
      return { frames: group.live, timestamp };
    } catch (err) {
      // Not found upstream, the upstream session ended, or it took too long.
      cancel.abort();
      // Removed by the source's retention: the requester is told the same.
      if (err instanceof MoqError && err.code === "gone") throw err;
      return undefined;
    } finally {
      if (!following) release();
    }
  };

  return (sequence, signal) => {
    let answer = pending.get(sequence);
    if (!answer) {
      const asked = answer = ask(sequence);
      pending.set(sequence, asked);
      // Shared until the answer is complete: a group still arriving, until it ended.
      const settled = async (): Promise<void> => {
        const frames = (await asked)?.frames;
        if (frames instanceof LiveFrames) await ended(frames);
      };
      void settled().catch(() => {}).finally(() => pending.delete(sequence));
    }
    // The requester may leave early; the shared request still finishes for the others.
    if (signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const gone = (): void => resolve(undefined);
      signal.addEventListener("abort", gone, { once: true });
      answer.then((group) => {
        signal.removeEventListener("abort", gone);
        resolve(group);
      }, (err) => {
        signal.removeEventListener("abort", gone);
        reject(err);
      });
    });
  };
}

// Waits for a group still arriving to end; one that sends nothing for `timeoutMs` is
// cancelled upstream (and so reset for every requester).
async function follow(
  live: LiveFrames,
  cancel: AbortController,
  timeoutMs: number,
  timers: Timers,
): Promise<void> {
  try {
    while (live.state === "open") {
      const quiet = (): Error => new Error("upstream went quiet");
      await withDeadline(live.changed(), timeoutMs, quiet, () => {}, timers);
    }
  } catch {
    cancel.abort();
    live.reset();
  }
}
