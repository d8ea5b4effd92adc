/** The consuming side's one-shot requests: a track's properties (TRACK) and one group (FETCH). */
import { concatBytes, DecodeError, encodeVarint, zigzagDecode } from "../../wire/mod.ts";
import {
  BidiType,
  checkTimestamp,
  decodeTrackInfo,
  encodeFetch,
  encodeTrackRequest,
  MAX_CONTROL_MESSAGE,
  type TrackInfo,
} from "../codec/mod.ts";
import { MoqError, type MoqErrorKind, refusalKind } from "../errors.ts";
import { StreamError } from "../../transport/mod.ts";
import { normalizePath } from "../../path/mod.ts";
import { wirePath } from "../path.ts";
import type { SessionCore } from "./core.ts";
import { openRequest } from "./request_stream.ts";
import type { ReceivedGroup } from "./types.ts";

/**
 * Asks the peer for a track's properties (lite-05 TRACK); rejects with
 * MoqError("not-found"), or "unauthorized" when the refusal's code says so.
 */
export async function requestTrackInfo(
  core: SessionCore,
  path: string,
  track: string,
): Promise<TrackInfo> {
  const { r, w } = await openRequest(core, 100);
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
      if (err instanceof DecodeError && err.kind !== "truncated") throw err;
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

/** Fetches one group of the peer's track; rejects with MoqError("not-found"). */
export async function fetchGroup(
  core: SessionCore,
  path: string,
  track: string,
  group: number,
  options: { priority?: number; signal?: AbortSignal },
): Promise<ReceivedGroup> {
  const canonical = normalizePath(path);
  if (core.version === "moq-lite-05") await requestTrackInfo(core, canonical, track);
  const { r, w } = await openRequest(core, 50);
  const onAbort = () => r.cancel();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await w.write(concatBytes([
      encodeVarint(BidiType.Fetch),
      encodeFetch({ path: wirePath(canonical), track, priority: options.priority ?? 0, group }),
    ]));
    await w.close();
    const frames: Uint8Array[] = [];
    let ts = 0n;
    let first: bigint | undefined;
    let total = 0;
    const maxGroup = core.options.maxGroupSize ?? 64 << 20;
    try {
      while (!(await r.done())) {
        if (core.version === "moq-lite-05") {
          ts = checkTimestamp(ts + zigzagDecode(await r.u62("timestamp delta")));
          first ??= ts;
        }
        const size = await r.u53("frame size");
        total += size;
        if (total > maxGroup) throw new DecodeError("too-large", "FETCH response over the limit");
        frames.push(await r.bytes(size, "frame"));
      }
    } catch (err) {
      if (err instanceof DecodeError && err.kind !== "truncated") throw err;
      throw new MoqError(
        refusedAs(core, err),
        `Group ${group} of "${canonical}" "${track}" not available`,
        {
          cause: err,
        },
      );
    }
    // Deno cannot reset with a code, so a refusal reads as an empty FIN.
    if (frames.length === 0) {
      throw new MoqError(
        "not-found",
        `Group ${group} of "${canonical}" "${track}" not available`,
      );
    }
    return { sequence: group, frames, timestamp: Number(first ?? 0n), exactTimestamp: first ?? 0n };
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    r.cancel();
  }
}

/** What a failed request reads as: the refusal its reset code names, else not found. */
function refusedAs(core: SessionCore, err: unknown): MoqErrorKind {
  const failure = core.transport.translateError(err);
  return (failure instanceof StreamError ? refusalKind(failure.code) : undefined) ?? "not-found";
}
