import { clientInput } from "../errors/mod.ts";
import { HttpProblem } from "../http/mod.ts";
import type { StreamContext } from "./context.ts";
import { streamTrack } from "./names.ts";
import { parseOffset } from "./offsets.ts";
import { type AppendData, jsonData, splitArray } from "./payload.ts";
import { readAfter } from "./reader.ts";
import type { StreamState } from "./stream_state.ts";

/** What a PUT asks to fork. */
export interface ForkRequest {
  /** The source stream's name. */
  readonly from: string;
  /** Stream-Fork-Offset as sent (absent: the source's tail). */
  readonly offset: string | null;
  /** Stream-Fork-Sub-Offset (0 when absent). */
  readonly sub: number;
}

/** Where a fork diverges: the source, the position inherited up to, and the partial entry after it. */
export interface ForkPoint {
  readonly source: StreamState;
  readonly at: number;
  /** The first `sub` messages or bytes of the source's next append, which the fork copies. */
  readonly prefix: AppendData;
}

/**
 * Resolves a fork request against its source: 404 for no such source, 409
 * for one deleted while forked, 400 for an offset past its tail or a
 * sub-offset past the next append's data.
 */
export async function forkPoint(
  ctx: StreamContext,
  req: ForkRequest,
  now: number,
): Promise<ForkPoint> {
  let sourcePath;
  try {
    sourcePath = streamTrack(req.from);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new HttpProblem(404, `No stream "${req.from}" to fork`);
  }
  if (ctx.registry.softDeleted(sourcePath)) {
    throw new HttpProblem(409, "The source stream was deleted");
  }
  const loaded = await ctx.registry.load(sourcePath, req.from);
  const source = loaded.state;
  if (!source || source.expired(now)) throw new HttpProblem(404, `No stream "${req.from}" to fork`);
  const tail = source.tail();
  let at = tail;
  if (req.offset !== null) {
    const offset = req.offset;
    const query = clientInput(() => parseOffset(offset));
    at = query.kind === "start" ? source.start() : query.kind === "now" ? tail : query.position;
    if (at > tail) throw new HttpProblem(400, "Stream-Fork-Offset is past the source's tail");
    at = Math.max(at, source.start());
  }
  if (req.sub === 0) return { source, at, prefix: { count: 0 } };
  const next = await readAfter(ctx.ledger, source, at, 1);
  if (next.size === 0) {
    throw new HttpProblem(400, "Stream-Fork-Sub-Offset: no data follows the fork offset");
  }
  const dataAt = next.next - 1;
  if (source.json) {
    const messages = splitArray(`[${next.messages[0]}]`);
    if (req.sub > messages.length) {
      throw new HttpProblem(400, "Stream-Fork-Sub-Offset is past the next append's messages");
    }
    return { source, at: dataAt, prefix: jsonData(messages.slice(0, req.sub)) };
  }
  const chunk = next.chunks[0]!;
  if (req.sub > chunk.length) {
    throw new HttpProblem(400, "Stream-Fork-Sub-Offset is past the next append's bytes");
  }
  return { source, at: dataAt, prefix: { bytes: chunk.slice(0, req.sub), count: req.sub } };
}
