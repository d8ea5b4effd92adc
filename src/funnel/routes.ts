import { clientInput } from "../errors/mod.ts";
import { type Context, Hono } from "hono";
import type { Verifier } from "../auth/mod.ts";
import {
  cors,
  type CorsHandler,
  type CorsOptions,
  HttpProblem,
  type OriginPolicy,
  problemResponse,
  streamResponse,
} from "../http/mod.ts";
import { LruCache } from "../cache/mod.ts";
import { parseTrackPath, type TrackPath } from "../path/mod.ts";
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
  /** Why the funnel cannot serve yet (its storage is being waited for): /health answers 503. */
  readonly notReady?: () => string | undefined;
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

/** The funnel's HTTP API as a value: one router, with its own parsed-path cache. */
export interface FunnelRouter {
  /**
   * Answers one request: the single entrance. A POST to a track goes straight
   * to the poster (the hot path); every other request goes through the routes.
   */
  fetch(request: Request, env?: FunnelEnv["Bindings"]): Response | Promise<Response>;
  /** {@link FunnelRouter.fetch} for a path or URL in process (`"/tracks/a/t"`), as Hono's `request`. */
  request(input: string | URL, init?: RequestInit): Promise<Response>;
  /** The routes it serves, `POST /tracks/*` among them (what the security matrix reads). */
  readonly routes: readonly { readonly method: string; readonly path: string }[];
  /** The track paths this router parsed and keeps (its own, never shared). */
  readonly paths: TrackPaths;
}

/**
 * The funnel's HTTP API: POST, PUT, GET and DELETE on
 * `/tracks/<broadcast path>/<track>`, plus `/health`. One entrance for every
 * request ({@link FunnelRouter.fetch}), CORS wrapped around it when the
 * origin policy allows other origins. Errors become problem+json in one
 * place (`errorResponse`).
 *
 * @example
 * ```ts
 * const router = funnelRoutes({ service, verifier: undefined, cors: SAME_ORIGIN_ONLY });
 * const response = await router.request("/tracks/room/1/chat", { method: "POST", body: "{}" });
 * ```
 */
export function funnelRoutes(options: FunnelRoutesOptions): FunnelRouter {
  const paths = new TrackPaths();
  const fail = (error: unknown) => {
    options.onError?.(error);
    return errorResponse(error, options.logError);
  };
  const app = routeTable(options, paths, fail);
  // The one entrance. POSTs to tracks, the senders' records, skip the route
  // table (same answers, less work per request).
  const post = trackPoster(options, paths);
  const handle: Entrance = (request, remoteAddr) => {
    if (request.method === "POST") {
      const raw = rawPathOf(request.url);
      // What the table's `/tracks/*` would match: a bare `/tracks` is answered 404 by the poster.
      if (raw.startsWith(TRACKS_PREFIX) || raw === "/tracks") {
        return post(request, remoteAddr, raw).catch(fail);
      }
    }
    return app.fetch(request, { remoteAddr });
  };
  const entrance = withCors(cors(options.cors, CORS), handle);
  return {
    fetch: (request, env) => entrance(request, env?.remoteAddr),
    request: async (input, init) => {
      const url = typeof input === "string" && input.startsWith("/")
        ? `http://localhost${input}`
        : input;
      return await entrance(new Request(url, init), undefined);
    },
    routes: [
      { method: "POST", path: "/tracks/*" },
      ...app.routes.map(({ method, path }) => ({ method, path })),
    ],
    paths,
  };
}

/** Every route but POST on a track, which never reaches this table. */
function routeTable(
  options: FunnelRoutesOptions,
  paths: TrackPaths,
  fail: (error: unknown) => Response,
): Hono<FunnelEnv> {
  const { service, verifier } = options;
  const app = new Hono<FunnelEnv>();

  app.get("/health", (c) => {
    const waiting = options.notReady?.();
    const detail = options.health?.() ?? {};
    return waiting === undefined
      ? c.json({ status: "ok", ...detail })
      : c.json({ status: "starting", detail: waiting, ...detail }, 503);
  });

  const metrics = options.metrics;
  if (metrics) {
    app.get(
      "/metrics",
      () => streamResponse(metrics(), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } }),
    );
  }

  // Every track route: the validated path, then the credential's decision for this action.
  const access = async (c: Context<FunnelEnv>, action: FunnelAction) => {
    const path = paths.of(c.req.url);
    const { sender } = await authorize(
      verifier,
      c.req.header("authorization") ?? null,
      action,
      path,
    );
    return { path, sender };
  };

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

  app.onError(fail);
  return app;
}

type Entrance = (
  request: Request,
  remoteAddr: Deno.NetAddr | undefined,
) => Response | Promise<Response>;

/**
 * `handle` with CORS around it: preflights answered, the allowed origins'
 * responses marked. Same-origin-only (the default) has no CORS handler, so
 * `handle` itself.
 */
function withCors(handler: CorsHandler | undefined, handle: Entrance): Entrance {
  if (!handler) return handle;
  return async (request, remoteAddr) => {
    const preflight = handler.preflight(request);
    if (preflight) return preflight;
    const response = await handle(request, remoteAddr);
    handler.apply(request, response.headers);
    return response;
  };
}

/** The funnel's request handler for `Deno.serve`: the one entrance of a {@link funnelRoutes}. */
export function funnelHandler(
  options: FunnelRoutesOptions,
): (request: Request, info: { remoteAddr: Deno.NetAddr }) => Response | Promise<Response> {
  const router = funnelRoutes(options);
  return (request, info) => router.fetch(request, { remoteAddr: info.remoteAddr });
}

/** POST on a track: validate, authorise, read the body, commit, answer 201. */
function trackPoster(
  options: FunnelRoutesOptions,
  paths: TrackPaths,
): (request: Request, remoteAddr: Deno.NetAddr | undefined, rawPath?: string) => Promise<Response> {
  const { service, verifier } = options;
  const poster: TracedPoster = async (
    request,
    remoteAddr,
    rawPath = rawPathOf(request.url),
    trace,
  ) => {
    const path = paths.ofRaw(rawPath);
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
  return parseRaw(rawPathOf(url));
}

const TRACKS_PREFIX = "/tracks/";

function parseRaw(raw: string): TrackPath {
  if (!raw.startsWith(TRACKS_PREFIX)) {
    throw new HttpProblem(404, "Tracks live at /tracks/<broadcast path>/<track>");
  }
  return clientInput(() => parseTrackPath(raw.slice(TRACKS_PREFIX.length)));
}

/** The request target's path, exactly as sent (no dot-segment resolution or decoding). */
function rawPathOf(url: string): string {
  const afterScheme = url.indexOf("://");
  const pathStart = url.indexOf("/", afterScheme < 0 ? 0 : afterScheme + 3);
  const raw = pathStart < 0 ? "/" : url.slice(pathStart);
  const end = raw.search(/[?#]/);
  return end >= 0 ? raw.slice(0, end) : raw;
}

/** Most request paths whose parsed track path one router keeps (default of {@link TrackPaths}). */
export const PARSED_PATHS_MAX = 4096;

/**
 * {@link trackPathOf} with the parsed paths kept, one cache per owner (each
 * router has its own). Senders post to few tracks over and over: reusing one
 * parsed (immutable) path per URL keeps decoding, validation and derived
 * names off the hot path. Least recently used first out, so hostile URLs
 * cannot grow it nor push out the tracks in use for long. Each key is a
 * valid track path (at most 1024 bytes, 3 characters each when
 * percent-encoded).
 */
export class TrackPaths {
  readonly #parsed: LruCache<string, TrackPath>;

  constructor(max: number = PARSED_PATHS_MAX) {
    this.#parsed = new LruCache(max);
  }

  /** The track path of a request URL, parsed once while it is in use. */
  of(url: string): TrackPath {
    return this.ofRaw(rawPathOf(url));
  }

  /** The track path of a raw request path (`/tracks/...`, as sent). */
  ofRaw(raw: string): TrackPath {
    const cached = this.#parsed.get(raw);
    if (cached) return cached;
    const path = parseRaw(raw);
    this.#parsed.set(raw, path);
    return path;
  }

  /** How many parsed paths are kept. */
  get size(): number {
    return this.#parsed.size;
  }
}

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
