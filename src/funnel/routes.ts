import { type Context, Hono } from "hono";
import type { Verifier } from "../auth/mod.ts";
import {
  cors,
  type CorsOptions,
  HttpProblem,
  type OriginPolicy,
  problemResponse,
  streamResponse,
} from "../http/mod.ts";
import { parseTrackPath, type TrackPath } from "../ledger/mod.ts";
import { PROMETHEUS_CONTENT_TYPE } from "../metrics/mod.ts";
import { authorize, type FunnelAction } from "./access.ts";
import { BODY_TIMEOUT_MS, readJsonBody } from "./body.ts";
import { errorResponse } from "./error_response.ts";
import { committedJson, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from "./history.ts";
import { idempotencyKeyProblem, type PostAnswer } from "./idempotency.ts";
import type { FunnelService } from "./service.ts";
import type { PostTracing, TracedPoster } from "./post_trace.ts";

/** What the HTTP routes need. */
export interface FunnelRoutesOptions {
  readonly service: FunnelService;
  /** Undefined when SLUICE_AUTH_KEYS is unset: every request is accepted. */
  readonly verifier: Verifier | undefined;
  readonly cors: OriginPolicy;
  /** Logs internal failures (never shown to clients). */
  readonly logError?: (message: string, error: unknown) => void;
  /** Extra liveness detail for /health. */
  readonly health?: () => Record<string, unknown>;
  /** How long a POST body may take to arrive, ms (default {@link BODY_TIMEOUT_MS}). */
  readonly bodyTimeoutMs?: number;
  /** Answers the Durable Streams protocol under `/v1/stream/`; without it there is none. */
  readonly streams?: (request: Request) => Promise<Response>;
  /** Told of every failure a request met, before it is answered (metrics count them). */
  readonly onError?: (error: unknown) => void;
  /** The Prometheus text served at `/metrics`; without it there is no such endpoint. */
  readonly metrics?: () => Iterable<string>;
  /** Spans for each POST to a track; absent while tracing is off. */
  readonly tracing?: PostTracing | undefined;
}

/** Per-request bindings: the client's address, passed by the server as `app.fetch(req, { remoteAddr })`. */
export type FunnelEnv = { Bindings: { remoteAddr?: Deno.NetAddr } };

const TRACK_METHODS = ["GET", "POST", "PUT", "DELETE"];
// The Durable Streams protocol's headers, so browsers may send and read them across origins.
const STREAM_REQUEST_HEADERS = [
  "if-none-match",
  "stream-closed",
  "stream-seq",
  "stream-ttl",
  "stream-expires-at",
  "stream-forked-from",
  "stream-fork-offset",
  "stream-fork-sub-offset",
  "producer-id",
  "producer-epoch",
  "producer-seq",
];
const STREAM_RESPONSE_HEADERS = [
  "etag",
  "stream-next-offset",
  "stream-up-to-date",
  "stream-closed",
  "stream-cursor",
  "stream-ttl",
  "stream-expires-at",
  "stream-sse-data-encoding",
  "producer-epoch",
  "producer-seq",
  "producer-expected-seq",
  "producer-received-seq",
];
const CORS: CorsOptions = {
  methods: [...TRACK_METHODS, "HEAD", "OPTIONS"],
  allowHeaders: ["authorization", "content-type", "idempotency-key", ...STREAM_REQUEST_HEADERS],
  exposeHeaders: ["retry-after", "location", "www-authenticate", ...STREAM_RESPONSE_HEADERS],
};

/**
 * The funnel's HTTP API as a Hono app: POST, PUT, GET and DELETE on
 * `/tracks/<broadcast path>/<track>`, plus `/health`. Errors become
 * problem+json in one place (`onError`, through `errorResponse`).
 *
 * @example
 * ```ts
 * const app = funnelRoutes({ service, verifier: undefined, cors: SAME_ORIGIN_ONLY });
 * const response = await app.request("/tracks/room/1/chat", { method: "POST", body: "{}" });
 * ```
 */
export function funnelRoutes(options: FunnelRoutesOptions): Hono<FunnelEnv> {
  const { service, verifier } = options;
  const app = new Hono<FunnelEnv>();

  // Same-origin-only (the default) has no CORS handler, so no middleware at all.
  const corsHandler = cors(options.cors, CORS);
  if (corsHandler) {
    app.use("*", async (c, next) => {
      const preflight = corsHandler.preflight(c.req.raw);
      if (preflight) return preflight;
      await next();
      corsHandler.apply(c.req.raw, c.res.headers);
      return undefined;
    });
  }

  app.get("/health", (c) => c.json({ status: "ok", ...(options.health?.() ?? {}) }));

  const metrics = options.metrics;
  if (metrics) {
    app.get(
      "/metrics",
      () => streamResponse(metrics(), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } }),
    );
  }

  // Every track route: the validated path, then the credential's decision for this action.
  const access = async (c: Context<FunnelEnv>, action: FunnelAction) => {
    const path = trackPathOf(c.req.url);
    const { sender } = await authorize(
      verifier,
      c.req.header("authorization") ?? null,
      action,
      path,
    );
    return { path, sender };
  };

  const post = trackPoster(options);
  app.post("/tracks/*", (c) => post(c.req.raw, c.env?.remoteAddr));

  app.put("/tracks/*", async (c) => {
    const { path } = await access(c, "post");
    const created = await service.put(path);
    return new Response(null, { status: created ? 201 : 204 });
  });

  app.get("/tracks/*", async (c) => {
    const { path } = await access(c, "fetch");
    const limit = parseLimit(c.req.query("limit"));
    const cursor = { before: c.req.query("before"), after: c.req.query("after") };
    const body = await service.history(path, cursor, limit);
    return await streamResponse(body, { headers: JSON_TYPE });
  });

  app.delete("/tracks/*", async (c) => {
    const { path, sender } = await access(c, "redact");
    const answer = await service.redact(path, c.req.query("group"), sender);
    return answer ? committed(answer) : new Response(null, { status: 204 });
  });

  app.all("/tracks/*", () => {
    throw new HttpProblem(405, `Use one of ${TRACK_METHODS.join(", ")} on a track`, {
      allow: TRACK_METHODS.join(", "),
    });
  });

  const streams = options.streams;
  if (streams) app.all("/v1/stream/*", (c) => streams(c.req.raw));

  app.notFound(() =>
    problemResponse(404, "No such endpoint; tracks live at /tracks/<broadcast path>/<track>")
  );

  app.onError((error) => {
    options.onError?.(error);
    return errorResponse(error, options.logError);
  });

  return app;
}

/**
 * The funnel's request handler for `Deno.serve`: {@link funnelRoutes}, with
 * POSTs to tracks (the hot path, senders' records) answered directly
 * instead of through the router, with the same answers.
 */
export function funnelHandler(
  options: FunnelRoutesOptions,
): (request: Request, info: { remoteAddr: Deno.NetAddr }) => Response | Promise<Response> {
  const app = funnelRoutes(options);
  const post = trackPoster(options);
  const fail = (error: unknown) => {
    options.onError?.(error);
    return errorResponse(error, options.logError);
  };
  // CORS headers are added by the router's middleware, so those requests take the router.
  const direct = cors(options.cors, CORS) === undefined;
  return (request, info) => {
    if (direct && request.method === "POST") {
      const raw = rawPathOf(request.url);
      if (raw.startsWith(TRACKS_PREFIX)) return post(request, info.remoteAddr, raw).catch(fail);
    }
    return app.fetch(request, { remoteAddr: info.remoteAddr });
  };
}

/** POST on a track: validate, authorise, read the body, commit, answer 201. */
function trackPoster(
  options: FunnelRoutesOptions,
): (request: Request, remoteAddr: Deno.NetAddr | undefined, rawPath?: string) => Promise<Response> {
  const { service, verifier } = options;
  const poster: TracedPoster = async (
    request,
    remoteAddr,
    rawPath = rawPathOf(request.url),
    trace,
  ) => {
    const path = trackPathOfRaw(rawPath);
    const headers = request.headers;
    const { sender } = await authorize(verifier, headers.get("authorization"), "post", path);
    const key = headers.get("idempotency-key") ?? undefined;
    if (key !== undefined) {
      const problem = idempotencyKeyProblem(key);
      if (problem) throw new HttpProblem(400, problem);
    }
    const payload = await readJsonBody(request, options.bodyTimeoutMs ?? BODY_TIMEOUT_MS);
    const limitKey = sender === undefined ? `addr:${remoteAddr?.hostname ?? ""}` : `sub:${sender}`;
    trace?.validated(path);
    const outcome = await service.post(path, { sender, limitKey }, payload, key);
    trace?.committed(outcome);
    return committed(outcome, outcome.replayed ? REPLAYED : undefined);
  };
  return options.tracing?.poster(poster) ?? poster;
}

const REPLAYED = { "idempotent-replayed": "true" };

/**
 * The track path of a request, from the raw request target: `new URL()`
 * would resolve `..` and `%2e%2e` before we could refuse them.
 */
export function trackPathOf(url: string): TrackPath {
  return trackPathOfRaw(rawPathOf(url));
}

const TRACKS_PREFIX = "/tracks/";

function trackPathOfRaw(raw: string): TrackPath {
  if (!raw.startsWith(TRACKS_PREFIX)) {
    throw new HttpProblem(404, "Tracks live at /tracks/<broadcast path>/<track>");
  }
  const cached = parsedPaths.get(raw);
  if (cached) return cached;
  let path: TrackPath;
  try {
    path = parseTrackPath(raw.slice(TRACKS_PREFIX.length));
  } catch (error) {
    throw new HttpProblem(400, (error as Error).message);
  }
  // Senders post to few tracks over and over: reusing one parsed (immutable)
  // path per URL keeps decoding, validation and derived names off the hot
  // path. Cleared wholesale when full, so hostile URLs cannot grow it.
  if (parsedPaths.size >= PARSED_PATHS_MAX) parsedPaths.clear();
  parsedPaths.set(raw, path);
  return path;
}

/** The request target's path, exactly as sent (no dot-segment resolution or decoding). */
function rawPathOf(url: string): string {
  const afterScheme = url.indexOf("://");
  const pathStart = url.indexOf("/", afterScheme < 0 ? 0 : afterScheme + 3);
  const raw = pathStart < 0 ? "/" : url.slice(pathStart);
  const end = raw.search(/[?#]/);
  return end >= 0 ? raw.slice(0, end) : raw;
}

const PARSED_PATHS_MAX = 4096;
const parsedPaths = new Map<string, TrackPath>();

/** 201 with `{"group","wallclock"}`: the answer to a POST and to a DELETE that redacted. */
function committed(answer: PostAnswer, extra?: Record<string, string>): Response {
  return new Response(committedJson(answer.group, answer.wallclock), {
    status: 201,
    headers: extra ? { ...JSON_TYPE, ...extra } : JSON_TYPE,
  });
}

const JSON_TYPE = { "content-type": "application/json" };

function parseLimit(text: string | undefined): number {
  if (text === undefined) return DEFAULT_PAGE_LIMIT;
  if (!/^\d{1,4}$/.test(text) || Number(text) < 1 || Number(text) > MAX_PAGE_LIMIT) {
    throw new HttpProblem(
      400,
      `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}, got "${text}"`,
    );
  }
  return Number(text);
}
