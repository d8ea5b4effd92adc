import { AuthError, bearerChallenge, extractBearer, requireAllowed } from "../auth/mod.ts";
import type { Action, Verifier } from "../auth/mod.ts";
import { HttpProblem, problemResponse } from "../http/mod.ts";
import {
  broadcastName,
  type Ledger,
  type LedgerEntry,
  LedgerError,
  type TrackPath,
} from "../ledger/mod.ts";
import { appendRequest, appendStream } from "./append.ts";
import type { StreamContext } from "./context.ts";
import { createRequest, createStream } from "./create.ts";
import { SECURITY_HEADERS } from "./headers.ts";
import { STREAMS_PREFIX, streamTrack } from "./names.ts";
import { headStream, readStream } from "./reads.ts";
import { StreamRegistry } from "./registry.ts";
import { deleteStream } from "./remove.ts";

/** Options of {@link StreamService}. */
export interface StreamServiceOptions {
  /** The funnel's ledger: every stream is one of its tracks. */
  readonly ledger: Ledger;
  /** The funnel's credential verifier; undefined accepts every request. */
  readonly verifier: Verifier | undefined;
  /** How long a long-poll waits, ms (default 20 s). */
  readonly longPollMs?: number;
  /** How long an SSE response stays open, ms (default 60 s). */
  readonly sseMs?: number;
  /** Most bytes one append or PUT may carry (default 16 MiB). */
  readonly maxAppendBytes?: number;
  /** Millisecond clock (TTL, cursors). */
  readonly now?: () => number;
  /** Logs failures clients are not shown. */
  readonly logError?: (message: string, error: unknown) => void;
}

/**
 * The Durable Streams protocol at `/v1/stream/<name>` over the funnel's
 * ledger: each stream is a ledger track (and so a MoQ track), each append
 * one entry (one group). Credentials apply as for `/tracks/`: `post` to
 * create, append and close, `fetch` to read, `redact` to delete.
 *
 * @example
 * ```ts
 * const streams = new StreamService({ ledger, verifier: undefined });
 * const response = await streams.handle(new Request("http://x/v1/stream/orders", { method: "PUT" }));
 * ```
 */
export class StreamService {
  readonly #ctx: StreamContext;
  readonly #verifier: Verifier | undefined;
  readonly #logError: ((message: string, error: unknown) => void) | undefined;

  /** Creates the service. */
  constructor(options: StreamServiceOptions) {
    const now = options.now ?? Date.now;
    this.#verifier = options.verifier;
    this.#logError = options.logError;
    this.#ctx = {
      ledger: options.ledger,
      registry: new StreamRegistry(options.ledger, now),
      now,
      longPollMs: options.longPollMs ?? 20_000,
      sseMs: options.sseMs ?? 60_000,
      authenticated: options.verifier !== undefined,
      maxAppendBytes: options.maxAppendBytes ?? 16 << 20,
    };
  }

  /** True for a request this service answers (its path is under `/v1/stream/`). */
  static owns(rawPath: string): boolean {
    return rawPath.startsWith(STREAMS_PREFIX);
  }

  /**
   * Told of every committed batch, by this funnel or another on a shared
   * ledger, in each track's order (wire it into the funnel's record sink):
   * the stream's state takes it in and live readers wake.
   */
  committed(path: TrackPath, entries: readonly LedgerEntry[]): void {
    this.#ctx.registry.committed(path, entries);
  }

  /** Nothing to do when a track is created: readers wait for commits. */
  trackCreated(_path: TrackPath, _newest: LedgerEntry | undefined): void {}

  /** Answers one request under `/v1/stream/`. */
  async handle(request: Request): Promise<Response> {
    try {
      return await this.#route(request);
    } catch (error) {
      return this.#failure(error);
    }
  }

  async #route(request: Request): Promise<Response> {
    const name = rawPath(request.url).slice(STREAMS_PREFIX.length);
    let path: TrackPath;
    try {
      path = streamTrack(name);
    } catch (error) {
      throw new HttpProblem(400, (error as Error).message);
    }
    const ctx = this.#ctx;
    switch (request.method) {
      case "GET":
        await this.#allow(request, "fetch", path);
        return await readStream(ctx, path, name, request);
      case "HEAD":
        await this.#allow(request, "fetch", path);
        return await headStream(ctx, path, name);
      case "PUT": {
        const sender = await this.#allow(request, "post", path);
        const req = createRequest(request, await this.#body(request));
        return await createStream(ctx, path, name, req, sender);
      }
      case "POST": {
        const sender = await this.#allow(request, "post", path);
        const req = appendRequest(request.headers, await this.#body(request));
        return await appendStream(ctx, path, name, req, sender);
      }
      case "DELETE": {
        const sender = await this.#allow(request, "redact", path);
        return await deleteStream(ctx, path, name, sender);
      }
      case "OPTIONS":
        return new Response(null, {
          status: 204,
          headers: { allow: METHODS, ...SECURITY_HEADERS },
        });
      default:
        throw new HttpProblem(405, "Use GET, HEAD, PUT, POST or DELETE on a stream", {
          allow: METHODS,
        });
    }
  }

  async #allow(request: Request, action: Action, path: TrackPath): Promise<string | undefined> {
    if (!this.#verifier) return undefined;
    const token = extractBearer(request.headers.get("authorization"));
    if (token === undefined) {
      throw new AuthError(
        "missing",
        "A bearer credential is required: Authorization: Bearer <token>",
      );
    }
    const grant = await this.#verifier.verify(token);
    requireAllowed(grant, action, broadcastName(path), path.track);
    return grant.sub;
  }

  async #body(request: Request): Promise<Uint8Array> {
    const length = Number(request.headers.get("content-length") ?? "0");
    if (length > this.#ctx.maxAppendBytes) {
      throw new HttpProblem(413, `An append may carry at most ${this.#ctx.maxAppendBytes} bytes`);
    }
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.length > this.#ctx.maxAppendBytes) {
      throw new HttpProblem(413, `An append may carry at most ${this.#ctx.maxAppendBytes} bytes`);
    }
    return body;
  }

  #failure(error: unknown): Response {
    let response: Response;
    if (error instanceof HttpProblem) {
      response = problemResponse(error.status, error.message, { ...error.headers });
    } else if (error instanceof AuthError) {
      response = error.status === 403
        ? problemResponse(403, error.message)
        : problemResponse(401, error.message, {
          "www-authenticate": bearerChallenge(error, { realm: "sluice" }),
        });
    } else if (error instanceof LedgerError && error.kind === "unavailable") {
      response = problemResponse(503, "The ledger is unavailable; retry later", {
        "retry-after": "1",
      });
    } else {
      this.#logError?.("Stream request failed", error);
      response = problemResponse(500, "The request failed inside the funnel; it has been logged");
    }
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) response.headers.set(k, v);
    return response;
  }
}

const METHODS = "GET, HEAD, PUT, POST, DELETE, OPTIONS";

/** The request target's path, exactly as sent. */
function rawPath(url: string): string {
  const afterScheme = url.indexOf("://");
  const start = url.indexOf("/", afterScheme < 0 ? 0 : afterScheme + 3);
  const raw = start < 0 ? "/" : url.slice(start);
  const end = raw.search(/[?#]/);
  return end >= 0 ? raw.slice(0, end) : raw;
}
