import { type CommitReader, entryGroup } from "../ledger/mod.ts";
import { parseGroupId } from "../record/mod.ts";
import { trackKey, type TrackPath } from "../path/mod.ts";
import {
  activeContext,
  activeTracer,
  failSpan,
  recordAttributes,
  type Span,
  spanNow,
  spanOf,
  type TraceContext,
  type Tracer,
} from "../tracing/mod.ts";
import type { PostAnswer } from "./idempotency.ts";

/** A POST handler that marks its steps on `trace` (tracing on) or ignores it (off). */
export type TracedPoster = (
  request: Request,
  remoteAddr: Deno.NetAddr | undefined,
  rawPath?: string,
  trace?: PostTrace,
) => Promise<Response>;

/** When a record's batch became durable and when the live side had taken it, ms. */
interface Published {
  readonly batch: number;
  readonly durableAt: number;
  readonly publishedAt: number;
}

// Timings of published records not yet claimed by their POST. Records of other funnels
// (shared ledger) are never claimed: the map is emptied wholesale when it grows this big.
const PUBLISHED_MAX = 4096;

/**
 * The spans of POSTs to tracks: under the HTTP server span Deno makes for
 * each request, a `validation` child (path, credential, Idempotency-Key,
 * body), a `commit` child (queued until durable; its batch's size and the
 * ledger backend) and a `publish` child (handing the batch to the live
 * side: MoQ groups, the listener). The commit and publish times come from
 * the ledger's commit feed: the batch's time in the feed (durable), and
 * when this reader, subscribed after the live side's, is told of it (the
 * live side has taken it). Exists only while tracing is on
 * ({@link PostTracing.start}).
 */
export class PostTracing {
  readonly #tracer: Tracer;
  readonly #backend: string;
  readonly #published = new Map<string, Published>();

  private constructor(tracer: Tracer, backend: string) {
    this.#tracer = tracer;
    this.#backend = backend;
  }

  /** The POST tracing of a funnel on `backend`, or undefined when tracing is off. */
  static start(backend: string): PostTracing | undefined {
    const tracer = activeTracer();
    return tracer && new PostTracing(tracer, backend);
  }

  /** A reader of the commit feed, subscribed after the live side's, timing each batch. */
  reader(): CommitReader {
    return {
      committed: (path, entries, info) => {
        const timing = { batch: entries.length, durableAt: info.at, publishedAt: spanNow() };
        if (this.#published.size >= PUBLISHED_MAX) this.#published.clear();
        const key = trackKey(path);
        for (const entry of entries) this.#published.set(`${key} ${entryGroup(entry)}`, timing);
      },
    };
  }

  /** `poster` with a {@link PostTrace} for each request, ended however the request ends. */
  poster(poster: TracedPoster): TracedPoster {
    return async (request, remoteAddr, rawPath) => {
      const trace = new PostTrace(
        this.#tracer,
        this.#backend,
        (path, group) => this.#claim(path, group),
      );
      try {
        return await poster(request, remoteAddr, rawPath, trace);
      } catch (error) {
        trace.failed(error);
        throw error;
      }
    };
  }

  #claim(path: TrackPath, group: string): Published | undefined {
    const key = `${trackKey(path)} ${group}`;
    const found = this.#published.get(key);
    if (found) this.#published.delete(key);
    return found;
  }
}

/** One POST's spans; its steps are marked by the handler as they end. */
export class PostTrace {
  readonly #tracer: Tracer;
  readonly #backend: string;
  readonly #claim: (path: TrackPath, group: string) => Published | undefined;
  readonly #server: Span | undefined;
  readonly #context: TraceContext;
  readonly #validation: Span;
  #path: TrackPath | undefined;
  #validatedAt: number | undefined;
  #ended = false;

  /** Starts the validation span under the active (HTTP server) span. */
  constructor(
    tracer: Tracer,
    backend: string,
    claim: (path: TrackPath, group: string) => Published | undefined,
  ) {
    this.#tracer = tracer;
    this.#backend = backend;
    this.#claim = claim;
    this.#context = activeContext();
    this.#server = spanOf(this.#context);
    this.#server?.updateName("POST /tracks/*");
    this.#server?.setAttribute("http.route", "/tracks/*");
    this.#validation = tracer.startSpan("validation", {}, this.#context);
  }

  /** The request is valid (path, credential, key, body): its commit starts now. */
  validated(path: TrackPath): void {
    const now = spanNow();
    this.#validation.end(now);
    this.#path = path;
    this.#validatedAt = now;
  }

  /** The record is committed (or an earlier one replayed): the commit and publish spans. */
  committed(answer: PostAnswer & { readonly replayed: boolean }): void {
    const path = this.#path;
    if (!path || this.#validatedAt === undefined || this.#ended) return;
    this.#ended = true;
    const sequence = parseGroupId(answer.group).seq + 1;
    const record = recordAttributes(path.broadcast.join("/"), path.track, sequence);
    this.#server?.setAttributes(record);
    const published = answer.replayed ? undefined : this.#claim(path, answer.group);
    const commit = this.#tracer.startSpan("commit", {
      startTime: this.#validatedAt,
      attributes: {
        ...record,
        "sluice.ledger.backend": this.#backend,
        "sluice.commit.replayed": answer.replayed,
        ...(published ? { "sluice.commit.batch_size": published.batch } : {}),
      },
    }, this.#context);
    if (!published) return commit.end();
    commit.end(published.durableAt);
    const publish = this.#tracer.startSpan("publish", {
      startTime: published.durableAt,
      attributes: { ...record, "sluice.publish.batch_size": published.batch },
    }, this.#context);
    publish.end(published.publishedAt);
  }

  /** The request failed: the step it failed in ends as failed. */
  failed(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#validatedAt === undefined) return failSpan(this.#validation, error);
    const commit = this.#tracer.startSpan("commit", {
      startTime: this.#validatedAt,
      attributes: { "sluice.ledger.backend": this.#backend },
    }, this.#context);
    failSpan(commit, error);
  }
}
