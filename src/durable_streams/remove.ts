import { HttpProblem } from "../http/mod.ts";
import { CommitRefused } from "../ledger/mod.ts";
import type { TrackPath } from "../path/mod.ts";
import { answer, type StreamContext } from "./context.ts";
import { formatMeta } from "./meta.ts";
import { streamTrack } from "./names.ts";
import type { Refused } from "./rules.ts";

/** Times a deletion is checked again when the stream was replaced under it. */
const ATTEMPTS = 3;

/**
 * DELETE: commits a deletion entry, after which the name reads as absent
 * (404) and a PUT creates a new stream at offsets after the old ones. The
 * records stay in the ledger (redact them to erase payloads), so forks
 * keep reading what they inherited; a stream with forks answers 410 until
 * its last fork is deleted. The deletion lifts the track's seal, and the
 * stream's gate admits it only while the stream it was checked against
 * still holds the name.
 */
export function deleteStream(
  ctx: StreamContext,
  path: TrackPath,
  name: string,
  sender: string | undefined,
): Promise<Response> {
  return ctx.registry.lock(path, async () => {
    for (let attempt = 1;; attempt++) {
      if (ctx.registry.softDeleted(path)) throw new HttpProblem(410, "The stream was deleted");
      let { state } = await ctx.registry.load(path, name);
      if (!state) ({ state } = await ctx.registry.load(path, name, true));
      if (!state || state.expired(ctx.now())) throw new HttpProblem(404, `No stream "${name}"`);
      const draft = {
        ...(sender !== undefined ? { sender } : {}),
        meta: formatMeta({ deleted: true })!,
        seal: "",
      };
      try {
        await state.gate.commit(state.track, draft, { kind: "delete", created: state.created });
      } catch (error) {
        const refused = error instanceof CommitRefused ? error.reason as Refused : undefined;
        if (!refused) throw error;
        if (refused.kind !== "again") throw new HttpProblem(404, `No stream "${name}"`);
        if (attempt >= ATTEMPTS) {
          throw new HttpProblem(503, "The stream changed while deleting; retry", {
            "retry-after": "1",
          });
        }
        continue;
      }
      const fork = state.config.fork;
      ctx.registry.deleted(state, fork ? streamTrack(fork.from) : undefined);
      return answer(204);
    }
  });
}
