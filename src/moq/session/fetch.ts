/** The consuming side's one-shot requests: a track's properties (TRACK) and one group (FETCH). */
import { concatBytes, DecodeError, encodeVarint } from "../../wire/mod.ts";
import {
  BidiType,
  decodeTrackInfo,
  encodeFetch,
  encodeTrackRequest,
  MAX_CONTROL_MESSAGE,
  type TrackInfo,
} from "../codec/mod.ts";
import { MoqError, type MoqErrorCode, refusalKind } from "../errors.ts";
import { StreamError } from "../../transport/mod.ts";
import { normalizePath } from "../../path/mod.ts";
import { wirePath } from "../wire_path.ts";
import type { SessionCore } from "./core.ts";
import { openRequest } from "./request_stream.ts";
import { GroupReading } from "./receive_group.ts";
import type { FetchOptions, ReceivedGroup } from "./types.ts";

/**
 * Asks the peer for a track's properties (lite-05 TRACK); rejects with
 * MoqError("not_found"), or "unauthorized" when the refusal's code says so.
 */
export async function requestTrackInfo(
  core: SessionCore,
  path: string,
  track: string,
): Promise<TrackInfo> {
  const { r, w } = await openRequest(core);
  try {
    await w.write(
      concatBytes([
        encodeVarint(BidiType.Track),
        encodeTrackRequest({ path: wirePath(path), track }),
      ]),
    );
    let body: Uint8Array;
    try {
      if (await r.done()) throw new Error("stream finished");
      body = await r.message("TRACK_INFO", MAX_CONTROL_MESSAGE);
    } catch (err) {
      if (err instanceof DecodeError && err.code !== "truncated") throw err;
      throw new MoqError(refusedAs(core, err), `Track "${path}" "${track}" not available`, {
        cause: err,
      });
    }
    return decodeTrackInfo(body);
  } finally {
    await w.close();
    r.cancel();
  }
}

/**
 * Fetches one group of the peer's track; rejects with MoqError("not_found").
 * The answer is read as a group stream is, within the same budgets (frame,
 * group, and the session's bytes of groups still arriving); with `partial`
 * a group still being written is handed over at its first frame and
 * followed frame by frame, and reset if its stream fails or `signal` aborts.
 */
export async function fetchGroup(
  core: SessionCore,
  path: string,
  track: string,
  group: number,
  options: FetchOptions,
): Promise<ReceivedGroup> {
  const canonical = normalizePath(path);
  if (core.version === "moq-lite-05") await requestTrackInfo(core, canonical, track);
  const { r, w } = await openRequest(core);
  const missing = (cause?: unknown) =>
    new MoqError(
      cause === undefined ? "not_found" : refusedAs(core, cause),
      `Group ${group} of "${canonical}" "${track}" not available`,
      cause === undefined ? undefined : { cause },
    );
  let answer: ReceivedGroup | undefined;
  let answered!: () => void;
  const handedOver = new Promise<void>((resolve) => (answered = resolve));
  let aborted = false;
  const reading = new GroupReading(core, group, {
    partial: options.partial ?? false,
    deliver: (g) => {
      if (aborted) return; // a cancelled stream reads as ended: what came is not the group
      answer = g;
      answered();
    },
  });
  // A group handed over is reset before its cancelled stream reads as ended.
  const onAbort = (): void => {
    aborted = true;
    reading.live?.reset();
    r.cancel();
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) onAbort();
  const read = (async () => {
    try {
      await w.write(concatBytes([
        encodeVarint(BidiType.Fetch),
        encodeFetch({ path: wirePath(canonical), track, priority: options.priority ?? 0, group }),
      ]));
      await w.close();
      await reading.run(r);
    } finally {
      core.budget.release(reading);
      options.signal?.removeEventListener("abort", onAbort);
      r.cancel();
    }
  })();
  try {
    // Settles with the group: at its first frame when it is still arriving, else at its end.
    await Promise.race([read, handedOver]);
  } catch (err) {
    if (err instanceof DecodeError && err.code !== "truncated") throw err;
    throw missing(err);
  }
  // The rest of a group handed over arrives meanwhile; a failure resets it.
  read.catch(() => reading.live?.reset());
  // Deno cannot reset with a code, so a refusal reads as an empty FIN.
  if (!answer || answer.frames.length === 0) throw missing();
  return answer;
}

/** What a failed request reads as: the refusal its reset code names, else not found. */
function refusedAs(core: SessionCore, err: unknown): MoqErrorCode {
  const failure = core.transport.translateError(err);
  return (failure instanceof StreamError ? refusalKind(failure.wireCode) : undefined) ??
    "not_found";
}
