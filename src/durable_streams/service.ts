import { clientInput } from "../errors/mod.ts";
import { AuthError, extractBearer, requireAllowed } from "../auth/mod.ts";
import type { Action, Verifier } from "../auth/mod.ts";
import { BODY_TIMEOUT_MS, errorResponse, HttpProblem, readBody } from "../http/mod.ts";
import type { CommitReader, Ledger, LedgerEntry } from "../ledger/mod.ts";
import { broadcastName, type TrackPath } from "../path/mod.ts";
import { appendRequest, appendStream } from "./append.ts";
import type { StreamContext } from "./context.ts";
import { createRequest, createStream, forkSource } from "./create.ts";
import { SECURITY_HEADERS } from "./headers.ts";
import { STREAMS_PREFIX, streamTrack } from "./names.ts";
import { headStream, readStream } from "./reads.ts";
import { MAX_KEPT_FORKS, MAX_KEPT_STREAMS, StreamRegistry } from "./registry.ts";
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
  /** How long an append's or PUT's body may take to arrive, ms (default 10 s). */
  readonly bodyTimeoutMs?: number;
  /**
   * The origin clients reach the funnel at (`https://funnel.example`), for an
   * absolute `Location`; without it `Location` is the stream's path. The
   * request's `Host` is never used: any client chooses it.
   */
  readonly publicOrigin?: string;
  /** Millisecond clock (TTL, cursors). */
  readonly now?: () => number;
  /**
   * Forks whose source is remembered at most (default
   * {@link MAX_KEPT_FORKS}); see {@link StreamRegistry}.
   */
  readonly maxForks?: number;
  /** Logs failures clients are not shown. */
  readonly logError?: (message: string, error: unknown) => void;
}

/**
 * The Durable Streams protocol at `/v1/stream/<name>` over the funnel's
 * ledger: each stream is a ledger track (and so a MoQ track), each append
 * one entry (one group). Credentials apply as for `/tracks/`: `post` to
 * create, append and close, `fetch` to read, `redact` to delete; a fork
 * needs `post` on the new stream and `fetch` on its source.
 *
 * @example
 * ```ts
 * const streams = new StreamService({ ledger, verifier: undefined });
 * const response = await streams.handle(new Request("http://x/v1/stream/orders", { method: "PUT" }));
 * ```
 */
export class StreamService implements CommitReader {
  readonly #ctx: StreamContext;
  readonly #verifier: Verifier | undefined;
  readonly #bodyTimeoutMs: number;
  readonly #logError: ((message: string, error: unknown) => void) | undefined;

  /** Creates the service. */
  constructor(options: StreamServiceOptions) {
    const now = options.now ?? Date.now;
    this.#verifier = options.verifier;
    this.#bodyTimeoutMs = options.bodyTimeoutMs ?? BODY_TIMEOUT_MS;
    this.#logError = options.logError;
    this.#ctx = {
      ledger: options.ledger,
      registry: new StreamRegistry(
        options.ledger,
        now,
        MAX_KEPT_STREAMS,
        options.maxForks ?? MAX_KEPT_FORKS,
      ),
      now,
      longPollMs: options.longPollMs ?? 20_000,
      sseMs: options.sseMs ?? 60_000,
      authenticated: options.verifier !== undefined,
      maxAppendBytes: options.maxAppendBytes ?? 16 << 20,
      publicOrigin: options.publicOrigin ?? "",
    };
    // Readers wake at their track's commits, whoever wrote them.
    options.ledger.commits.subscribe(this);
  }

  /** How many streams' state (writer state, producers) this service keeps in memory. */
  get keptStreams(): number {
    return this.#ctx.registry.kept;
  }

  /** Forks whose source this funnel remembers (at most `maxForks`). */
  get forkLinks(): number {
    return this.#ctx.registry.forkLinks;
  }

  /** True for a request this service answers (its path is under `/v1/stream/`). */
  static owns(rawPath: string): boolean {
    return rawPath.startsWith(STREAMS_PREFIX);
  }

  /**
   * Told of every committed batch, by this funnel or another on a shared
   * ledger, in each track's order (the service reads the ledger's commit
   * feed from its construction on): the stream's state takes it in and live
   * readers wake.
   */
  committed(path: TrackPath, entries: readonly LedgerEntry[]): void {
    this.#ctx.registry.committed(path, entries);
  }

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
    const path = clientInput(() => streamTrack(name));
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
        // A fork copies its source's data into a stream the caller reads: it needs the
        // right to read the source, checked before anything of the source is looked at.
        const from = forkSource(request.headers);
        if (from !== undefined) await this.#allow(request, "fetch", forkSourcePath(from));
        const req = createRequest(request.headers, name, await this.#body(request));
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

  /** The body, read as it arrives: refused once it passes the cap, or when it is too slow. */
  #body(request: Request): Promise<Uint8Array> {
    const maxBytes = this.#ctx.maxAppendBytes;
    return readBody(request, {
      maxBytes,
      timeoutMs: this.#bodyTimeoutMs,
      tooLarge: `An append may carry at most ${maxBytes} bytes`,
    });
  }

  #failure(error: unknown): Response {
    const log = this.#logError;
    const response = errorResponse(error, log && ((_, e) => log("Stream request failed", e)));
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) response.headers.set(k, v);
    return response;
  }
}

const METHODS = "GET, HEAD, PUT, POST, DELETE, OPTIONS";

/** The track of a fork's source; a name that is no stream's has nothing to fork (404). */
function forkSourcePath(from: string): TrackPath {
  try {
    return streamTrack(from);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new HttpProblem(404, `No stream "${from}" to fork`);
  }
}

/** The request target's path, exactly as sent. */
function rawPath(url: string): string {
  const afterScheme = url.indexOf("://");
  const start = url.indexOf("/", afterScheme < 0 ? 0 : afterScheme + 3);
  const raw = start < 0 ? "/" : url.slice(start);
  const end = raw.search(/[?#]/);
  return end >= 0 ? raw.slice(0, end) : raw;
}
