import { SluiceError } from "../../errors/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { MoqError } from "../../moq/mod.ts";
import { withDeadline } from "../../timers/mod.ts";
import { SpanKind, type SpanOptions, traced, trackAttributes } from "../../tracing/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import type { RouteSource } from "./route_table.ts";
import type { UpstreamTrack } from "./upstream_track.ts";

/** Why a downstream subscription was refused. */
export class SubscribeError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["not_found", "upstream_error", "unauthorized"] as const;
  /** Stable code, also the `code` label of subscribe_errors_total. */
  declare readonly code: (typeof SubscribeError.codes)[number];

  /** Creates the error. */
  constructor(code: SubscribeError["code"], message: string) {
    super(code, message);
  }
}

/**
 * Longest wait for an upstream TRACK or SUBSCRIBE to be answered, ms: a
 * peer that never answers fails the request (and its subscriber's) instead
 * of holding it, and a route switch to it, forever.
 */
export const UPSTREAM_ANSWER_MS = 5000;

/** The error of an upstream request that was not answered in time. */
export function unanswered(what: string): () => MoqError {
  return () => new MoqError("closed", `${what}: no answer within ${UPSTREAM_ANSWER_MS / 1000} s`);
}

/** An upstream subscription to `path`/`track` through `source`, counted and timed. */
export async function subscribeUpstream(
  m: RelayMetrics,
  now: () => number,
  path: string,
  track: string,
  source: RouteSource,
  start: number | undefined,
): Promise<UpstreamTrack> {
  const labels = { path: `/${path}`, track };
  const started = now();
  const counted = (failed: boolean): void => {
    m.trackUpstreamRequestsTotal.inc(labels);
    if (failed) m.trackUpstreamRequestErrorsTotal.inc(labels);
    m.trackUpstreamRequestDurationSeconds.observe(labels, (now() - started) / 1000);
  };
  try {
    const upstream = await traced(
      "relay.upstream.subscribe",
      upstreamSpan(path, track, source, start),
      () =>
        withDeadline(
          source.subscribe(track, start === undefined ? {} : { start }),
          UPSTREAM_ANSWER_MS,
          unanswered(`SUBSCRIBE to "${path}/${track}" through ${source.remote}`),
          (late) => late.close(),
        ),
    );
    counted(false);
    return upstream;
  } catch (e) {
    // Per-track series are made only for a track the upstream answered: a refusal of a track
    // this relay does not serve yet counts in subscribe_errors_total{code} alone, so a client
    // naming tracks that do not exist cannot mint series (a track served already counts it).
    if (m.trackUpstreamRequestsTotal.has(labels)) counted(true);
    throw upstreamFailure(path, track, e);
  }
}

/** The span options of an upstream SUBSCRIBE through `source`. */
function upstreamSpan(
  path: string,
  track: string,
  source: RouteSource,
  start: number | undefined,
): SpanOptions {
  return {
    kind: SpanKind.CLIENT,
    attributes: {
      ...trackAttributes(path, track),
      "sluice.relay.upstream": source.remote,
      ...(start === undefined ? {} : { "moq.subscribe.start": start }),
    },
  };
}

/** What a failed upstream request means for the downstream one. */
export function upstreamFailure(path: string, track: string, e: unknown): SubscribeError {
  const notFound = e instanceof SluiceError && e.code === "not_found";
  return new SubscribeError(
    notFound ? "not_found" : "upstream_error",
    `Upstream request for "${path}/${track}" failed: ${errorText(e)}`,
  );
}
