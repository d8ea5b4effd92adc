import { HttpProblem } from "../http/mod.ts";
import type { TrackPath } from "../ledger/mod.ts";
import { answer, type StreamContext } from "./context.ts";
import { formatMeta } from "./meta.ts";
import { streamTrack } from "./names.ts";

/**
 * DELETE: commits a deletion entry, after which the name reads as absent
 * (404) and a PUT creates a new stream at offsets after the old ones. The
 * records stay in the ledger (redact them to erase payloads), so forks
 * keep reading what they inherited; a stream with forks answers 410 until
 * its last fork is deleted.
 */
export function deleteStream(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
  sender: string | undefined,
): Promise<Response> {
  return ctx.registry.lock(path, async () => {
    if (ctx.registry.softDeleted(path)) throw new HttpProblem(410, "The stream was deleted");
    const { state } = await ctx.registry.load(path, name);
    if (!state || state.expired(ctx.now())) throw new HttpProblem(404, `No stream "${name}"`);
    await state.track.append({
      ...(sender !== undefined ? { sender } : {}),
      meta: formatMeta({ deleted: true })!,
    });
    const fork = state.config.fork;
    ctx.registry.deleted(state, fork ? streamTrack(fork.from) : undefined);
    return answer(204);
  });
}
