import { HttpProblem } from "../http/mod.ts";
import { type CommitOutcome, CommitRefused, type EntryDraft } from "../ledger/mod.ts";
import type { TrackPath } from "../path/mod.ts";
import { answer, offsetText, type StreamContext } from "./context.ts";
import { sameType } from "./content_type.ts";
import { closedHeader, H, type ProducerHeaders, producerHeaders } from "./headers.ts";
import { positionOf } from "./lineage.ts";
import { type EntryMeta, formatMeta } from "./meta.ts";
import { appendData } from "./payload.ts";
import { decide, type Intent, type Refused } from "./rules.ts";
import { CLOSED_SEAL } from "./seal.ts";
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

type Queued = { readonly done: Response } | {
  readonly done?: undefined;
  readonly state: StreamState;
  readonly committing: Promise<CommitOutcome>;
};

/** Times a write is checked again when the stream was replaced under it. */
const ATTEMPTS = 3;

/**
 * POST: appends the body as one ledger entry (one MoQ group), closing the
 * stream with it when asked. The request is checked against what this
 * process knows, then the stream's gate checks closure, the producer and
 * `Stream-Seq` again where the ledger orders the track, against every entry
 * committed before (by any funnel), and stores the append only if they
 * pass. Appends are queued in arrival order under the stream's lock and
 * committed outside it, so concurrent appends still share one group commit.
 */
export async function appendStream(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
  req: AppendRequest,
  sender: string | undefined,
): Promise<Response> {
  for (let attempt = 1;; attempt++) {
    const queued: Queued = await ctx.registry.lock(path, () => queue(ctx, path, name, req, sender));
    if (queued.done) return queued.done;
    const { state } = queued;
    try {
      const { entry } = await queued.committing;
      return appended(state, req, entry.seq);
    } catch (error) {
      if (!(error instanceof CommitRefused) || error.reason === undefined) throw error;
      const refused = error.reason as Refused;
      if (refused.kind !== "again") return refusedAnswer(state, req, name, refused);
      if (attempt >= ATTEMPTS) {
        throw new HttpProblem(503, "The stream changed while appending; retry", {
          "retry-after": "1",
        });
      }
    }
  }
}

async function queue(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
  req: AppendRequest,
  sender: string | undefined,
): Promise<Queued> {
  if (ctx.registry.softDeleted(path)) throw new HttpProblem(410, "The stream was deleted");
  let { state } = await ctx.registry.load(path, name);
  // Another funnel may have created or reopened it (deleted and created again) since this
  // one last heard: a stream not seen, or seen closed, is looked up in the storage first.
  if (!state || state.closed) ({ state } = await ctx.registry.load(path, name, true));
  const now = ctx.now();
  if (!state || state.expired(now)) throw new HttpProblem(404, `No stream "${name}"`);
  state.touch(now);
  const producer = req.producer;
  if (state.closed) {
    // Closure is final for this stream: answered here, as the gate would.
    const next = Math.max(state.track.newest?.seq ?? -1, state.gate.seen, state.created) + 1;
    const refused = decide(state.gate.head, intentOf(state, req), next);
    if (refused) return { done: refusedAnswer(state, req, name, refused) };
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
  const draft: EntryDraft = {
    ...(sender !== undefined ? { sender } : {}),
    ...(data.payload !== undefined ? { payload: data.payload } : {}),
    ...(data.bytes !== undefined ? { bytes: data.bytes } : {}),
    ...(metaText !== undefined ? { meta: metaText } : {}),
    ...(req.closed ? { seal: CLOSED_SEAL } : {}),
  };
  return { state, committing: state.gate.commit(state.track, draft, intentOf(state, req)) };
}

function intentOf(state: StreamState, req: AppendRequest): Intent {
  return {
    kind: "append",
    created: state.created,
    closes: req.closed,
    hasBody: req.body.length > 0,
    producer: req.producer,
    streamSeq: req.streamSeq,
  };
}

/** The answer to an append stored as `seq`. */
function appended(state: StreamState, req: AppendRequest, seq: number): Response {
  const headers: Record<string, string> = {
    [H.nextOffset]: offsetText(positionOf(state.own, seq)),
    ...(req.closed ? { [H.closed]: "true" } : {}),
  };
  if (req.producer) {
    headers[H.producerEpoch] = String(req.producer.epoch);
    headers[H.producerSeq] = String(req.producer.seq);
  }
  // 200 says a producer's data was stored; a close without data has nothing to show.
  return answer(req.producer && req.body.length > 0 ? 200 : 204, headers);
}

/** The answer to an append the stream's rules refused. */
function refusedAnswer(
  state: StreamState,
  req: AppendRequest,
  name: string,
  refused: Refused,
): Response {
  const tail = (seq: number) => offsetText(positionOf(state.own, Math.max(seq, state.created)));
  switch (refused.kind) {
    case "absent":
    case "again":
    case "exists":
      throw new HttpProblem(404, `No stream "${name}"`);
    case "closed": {
      const producer = refused.accepted ? req.producer : undefined;
      const headers: Record<string, string> = {
        [H.closed]: "true",
        [H.nextOffset]: tail(refused.tail),
      };
      if (producer) {
        headers[H.producerEpoch] = String(producer.epoch);
        headers[H.producerSeq] = String(producer.seq);
      }
      return answer(refused.accepted ? 204 : 409, headers);
    }
    case "seq":
      throw new HttpProblem(409, "Stream-Seq must increase");
    case "producer": {
      const verdict = refused.verdict;
      switch (verdict.kind) {
        case "stale":
          return answer(403, { [H.producerEpoch]: String(verdict.epoch) });
        case "bad-epoch-start":
          throw new HttpProblem(400, "A new Producer-Epoch must start at Producer-Seq 0");
        case "gap":
          return answer(409, {
            [H.expectedSeq]: String(verdict.expected),
            [H.receivedSeq]: String(verdict.received),
          });
        case "duplicate":
          return answer(204, {
            [H.nextOffset]: tail(refused.tail),
            [H.producerEpoch]: String(verdict.state.epoch),
            [H.producerSeq]: String(verdict.state.seq),
          });
      }
    }
  }
}
