import { HttpProblem } from "../http/mod.ts";
import type { LedgerEntry, TrackPath } from "../ledger/mod.ts";
import { answer, offsetText, type StreamContext } from "./context.ts";
import { sameType } from "./content_type.ts";
import { closedHeader, H, type ProducerHeaders, producerHeaders } from "./headers.ts";
import { positionOf } from "./lineage.ts";
import { type EntryMeta, formatMeta } from "./meta.ts";
import { appendData } from "./payload.ts";
import { checkProducer } from "./producer.ts";
import type { StreamState } from "./stream_state.ts";

/** What a POST asks for. */
interface AppendRequest {
  readonly type: string | null;
  readonly closed: boolean;
  readonly producer: ProducerHeaders | undefined;
  readonly streamSeq: string | null;
  readonly body: Uint8Array;
}

/** Reads a POST's headers: 400 for invalid ones. */
export function appendRequest(headers: Headers, body: Uint8Array): AppendRequest {
  return {
    type: headers.get("content-type"),
    closed: closedHeader(headers),
    producer: producerHeaders(headers),
    streamSeq: headers.get(H.seq),
    body,
  };
}

type Checked = { readonly done: Response } | {
  readonly done?: undefined;
  readonly state: StreamState;
  readonly committing: Promise<LedgerEntry>;
};

/**
 * POST: appends the body as one ledger entry (one MoQ group), closing the
 * stream with it when asked. Checks run in order under the stream's lock;
 * the commit itself is awaited outside it, so concurrent appends still
 * share one group commit.
 */
export async function appendStream(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
  req: AppendRequest,
  sender: string | undefined,
): Promise<Response> {
  const checked: Checked = await ctx.registry.lock(path, () => check(ctx, path, name, req, sender));
  if (checked.done) return checked.done;
  const { state } = checked;
  let entry: LedgerEntry;
  try {
    entry = await checked.committing;
  } catch (error) {
    // What reached storage is unknown: read the stream back before the next request.
    ctx.registry.forget(path);
    throw error;
  }
  if (req.closed) state.closed = true;
  const headers: Record<string, string> = {
    [H.nextOffset]: offsetText(positionOf(state.own, entry.seq)),
    ...(state.closing ? { [H.closed]: "true" } : {}),
  };
  if (req.producer) {
    headers[H.producerEpoch] = String(req.producer.epoch);
    headers[H.producerSeq] = String(req.producer.seq);
  }
  // 200 says a producer's data was stored; a close without data has nothing to show.
  return answer(req.producer && req.body.length > 0 ? 200 : 204, headers);
}

async function check(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
  req: AppendRequest,
  sender: string | undefined,
): Promise<Checked> {
  if (ctx.registry.softDeleted(path)) throw new HttpProblem(410, "The stream was deleted");
  const { state } = await ctx.registry.load(path, name);
  const now = ctx.now();
  if (!state || state.expired(now)) throw new HttpProblem(404, `No stream "${name}"`);
  state.lastAccess = now;
  const producer = req.producer;
  if (state.closing) {
    const closer = state.closer;
    const sameCloser = producer && closer && closer[0] === producer.id &&
      closer[1] === producer.epoch && closer[2] === producer.seq;
    if (sameCloser || (req.body.length === 0 && req.closed)) {
      await state.producers.get(producer?.id ?? "")?.pending;
      return { done: answer(204, closedAnswer(state, producer)) };
    }
    return { done: answer(409, closedAnswer(state, undefined)) };
  }
  if (req.body.length === 0 && !req.closed) {
    throw new HttpProblem(400, "An append needs a body (or Stream-Closed: true to close)");
  }
  if (req.body.length > 0) {
    if (req.type === null) throw new HttpProblem(400, "An append needs a Content-Type");
    if (!sameType(req.type, state.config.type)) {
      throw new HttpProblem(409, `The stream's content type is ${state.config.type}`);
    }
  }
  if (producer) {
    const verdict = checkProducer(state.producers.get(producer.id), producer);
    switch (verdict.kind) {
      case "stale":
        return { done: answer(403, { [H.producerEpoch]: String(verdict.epoch) }) };
      case "bad-epoch-start":
        throw new HttpProblem(400, "A new Producer-Epoch must start at Producer-Seq 0");
      case "gap":
        return {
          done: answer(409, {
            [H.expectedSeq]: String(verdict.expected),
            [H.receivedSeq]: String(verdict.received),
          }),
        };
      case "duplicate":
        await verdict.state.pending;
        return {
          done: answer(204, {
            [H.nextOffset]: offsetText(state.tail()),
            [H.producerEpoch]: String(verdict.state.epoch),
            [H.producerSeq]: String(verdict.state.seq),
          }),
        };
    }
  }
  if (req.streamSeq !== null && state.streamSeq !== undefined && req.streamSeq <= state.streamSeq) {
    throw new HttpProblem(409, "Stream-Seq must increase");
  }
  const data = appendData(state.json, req.body);
  if (req.body.length > 0 && data.count === 0) {
    throw new HttpProblem(400, "An empty JSON array appends nothing");
  }
  const meta: EntryMeta = {
    ...(producer ? { producer: [producer.id, producer.epoch, producer.seq] as const } : {}),
    ...(req.streamSeq !== null ? { seq: req.streamSeq } : {}),
    ...(req.closed ? { closed: true as const } : {}),
    ...(data.n !== undefined ? { n: data.n } : {}),
  };
  const metaText = formatMeta(meta);
  const committing = state.track.append({
    ...(sender !== undefined ? { sender } : {}),
    ...(data.payload !== undefined ? { payload: data.payload } : {}),
    ...(data.bytes !== undefined ? { bytes: data.bytes } : {}),
    ...(metaText !== undefined ? { meta: metaText } : {}),
  });
  // The writer state moves on now, so the next append in line is checked against it.
  if (producer) {
    state.producers.set(producer.id, {
      epoch: producer.epoch,
      seq: producer.seq,
      pending: committing.catch(() => {}),
    });
  }
  if (req.streamSeq !== null) state.streamSeq = req.streamSeq;
  if (req.closed) {
    state.closing = true;
    state.closer = producer ? [producer.id, producer.epoch, producer.seq] : undefined;
  }
  return { state, committing };
}

function closedAnswer(
  state: StreamState,
  producer: ProducerHeaders | undefined,
): Record<string, string> {
  const out: Record<string, string> = {
    [H.closed]: "true",
    [H.nextOffset]: offsetText(state.tail()),
  };
  if (producer) {
    out[H.producerEpoch] = String(producer.epoch);
    out[H.producerSeq] = String(producer.seq);
  }
  return out;
}
