import { clientInput } from "../errors/mod.ts";
import { HttpProblem } from "../http/mod.ts";
import type { TrackPath } from "../path/mod.ts";
import { answer, answerHeaders, offsetText, type StreamContext } from "./context.ts";
import { servedHeaders } from "./content_type.ts";
import { nextCursor } from "./cursor.ts";
import { H } from "./headers.ts";
import { type OffsetQuery, parseOffset } from "./offsets.ts";
import { joinChunks, jsonArray, readAfter, type ReadBatch } from "./reader.ts";
import { sseResponse } from "./sse.ts";
import type { CommitWatch } from "./registry.ts";
import type { StreamState } from "./stream_state.ts";

/** A stream that exists and has not expired, or 404 / 410. */
export async function liveStream(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
): Promise<StreamState> {
  if (ctx.registry.softDeleted(path)) throw new HttpProblem(410, "The stream was deleted");
  let { state } = await ctx.registry.load(path, name);
  // Created on another funnel moments ago: this one may not have heard yet, the storage has.
  if (!state) ({ state } = await ctx.registry.load(path, name, true));
  if (!state || state.expired(ctx.now())) throw new HttpProblem(404, `No stream "${name}"`);
  return state;
}

/** HEAD: the stream's metadata, never cached. */
export async function headStream(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
): Promise<Response> {
  const state = await liveStream(ctx, path, name);
  return answer(200, {
    "content-type": state.config.type,
    [H.nextOffset]: offsetText(state.tail()),
    "cache-control": "no-store",
    ...(state.config.ttl !== undefined ? { [H.ttl]: String(state.config.ttl) } : {}),
    ...(state.config.expiresAt !== undefined ? { [H.expiresAt]: state.config.expiresAt } : {}),
    ...(state.closed ? { [H.closed]: "true" } : {}),
  });
}

/** GET: a catch-up read, a long-poll or an SSE stream, by `live`. */
export async function readStream(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
  request: Request,
): Promise<Response> {
  const params = new URL(request.url).searchParams;
  const live = params.get("live");
  if (live !== null && live !== "long-poll" && live !== "sse") {
    throw new HttpProblem(400, `live must be long-poll or sse, got "${live}"`);
  }
  const offset: OffsetQuery = clientInput(() => parseOffset(params.get("offset")));
  if (live !== null && !params.has("offset")) {
    throw new HttpProblem(400, "A live read needs an offset");
  }
  const state = await liveStream(ctx, path, name);
  state.read(ctx.now());
  // Watched before the position is taken and the storage read, so an append committed
  // meanwhile wakes this long-poll instead of leaving it to wait out its time.
  const watch = live === "long-poll" && !state.closed ? ctx.registry.watch(path) : undefined;
  try {
    return await answerRead(ctx, state, offset, live, request, watch);
  } finally {
    watch?.cancel();
  }
}

/** Answers a GET once the stream is found (and, for a long-poll, watched). */
async function answerRead(
  ctx: StreamContext,
  state: StreamState,
  offset: OffsetQuery,
  live: string | null,
  request: Request,
  watch: CommitWatch | undefined,
): Promise<Response> {
  const params = new URL(request.url).searchParams;
  const start = offset.kind === "start"
    ? state.start()
    : offset.kind === "now"
    ? state.tail()
    : Math.max(offset.position, state.start());
  const cursor = live === null ? undefined : nextCursor(ctx.now(), params.get("cursor"));
  if (live === "sse") {
    // Once the event stream has begun it cannot answer 410: a removed start is refused first.
    await readAfter(ctx.ledger, state, start, 1);
    return sseResponse(ctx, state, start, cursor!);
  }
  if (offset.kind === "now" && live === null) {
    return new Response(state.json ? "[]" : null, {
      status: 200,
      headers: answerHeaders({
        ...servedHeaders(state.config.type),
        [H.nextOffset]: offsetText(start),
        [H.upToDate]: "true",
        "cache-control": "no-store",
        ...(state.closed ? { [H.closed]: "true" } : {}),
      }),
    });
  }
  let batch = offset.kind === "now" ? empty(start) : await readAfter(ctx.ledger, state, start);
  if (live === "long-poll" && batch.next === start) {
    if (watch) {
      await watch.wait(ctx.longPollMs, request.signal);
      batch = await readAfter(ctx.ledger, state, start);
    }
    if (batch.next === start) {
      return answer(204, {
        [H.nextOffset]: offsetText(start),
        [H.upToDate]: "true",
        ...(state.closed ? { [H.closed]: "true" } : { [H.cursor]: cursor! }),
      });
    }
  }
  return batchResponse(ctx, state, start, batch, cursor, request.headers.get("if-none-match"));
}

function empty(at: number): ReadBatch {
  return { messages: [], chunks: [], size: 0, next: at };
}

function batchResponse(
  ctx: StreamContext,
  state: StreamState,
  start: number,
  batch: ReadBatch,
  cursor: string | undefined,
  ifNoneMatch: string | null,
): Response {
  const upToDate = batch.next >= state.tail();
  const closed = upToDate && state.closed;
  const etag = `"${state.created}-${start}-${batch.next}${closed ? "-c" : ""}"`;
  const headers: Record<string, string> = {
    ...servedHeaders(state.config.type),
    [H.nextOffset]: offsetText(batch.next),
    etag,
    "cache-control": `${
      ctx.authenticated ? "private" : "public"
    }, max-age=60, stale-while-revalidate=300`,
    ...(upToDate ? { [H.upToDate]: "true" } : {}),
    ...(closed ? { [H.closed]: "true" } : {}),
    ...(cursor !== undefined && !closed ? { [H.cursor]: cursor } : {}),
  };
  if (ifNoneMatch !== null && ifNoneMatch.split(",").some((t) => t.trim() === etag)) {
    return answer(304, headers);
  }
  const body = state.json ? jsonArray(batch.messages) : joinChunks(batch.chunks);
  return new Response(body as BodyInit, { status: 200, headers: answerHeaders(headers) });
}
