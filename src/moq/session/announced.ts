/** The consuming side of announcements: follows which broadcasts the peer announces under a prefix. */
import { BackpressureQueue, concatBytes, DecodeError, encodeVarint } from "../../wire/mod.ts";
import type { AnnounceEvent } from "../announcer.ts";
import {
  type AnnounceOk,
  BidiType,
  decodeAnnounce,
  decodeAnnounceOk,
  encodeAnnounceRequest,
  MAX_CONTROL_MESSAGE,
} from "../codec/mod.ts";
import { joinPath, MAX_PATH_BYTES, normalizePath, prefixCovers } from "../../path/mod.ts";
import { wirePrefix } from "../wire_path.ts";
import { loopsThrough } from "../hops.ts";
import type { SessionCore } from "./core.ts";
import { MAX_ANNOUNCED } from "./types.ts";
import { ClosableRequest } from "./request_stream.ts";

/** Watches the peer's announcements under `prefix` on a new announce stream (see `session.announced`). */
export function announced(
  core: SessionCore,
  prefix: string,
  options: { signal?: AbortSignal },
): AsyncIterable<AnnounceEvent> {
  const canonical = normalizePath(prefix);
  const closing = new AbortController();
  const queue = new BackpressureQueue<AnnounceEvent>(1024, () => closing.abort());
  const signal = options.signal;
  const onAbort = () => {
    closing.abort();
    queue.end();
  };
  if (signal?.aborted || core.isClosed) {
    queue.end();
    return queue;
  }
  signal?.addEventListener("abort", onAbort, { once: true });
  const onSession = () => closing.abort();
  core.abort.signal.addEventListener("abort", onSession, { once: true });
  core.spawn(
    "announce",
    runAnnounced(core, canonical, queue, closing.signal).finally(() => {
      signal?.removeEventListener("abort", onAbort);
      core.abort.signal.removeEventListener("abort", onSession);
    }),
  );
  return queue;
}

async function runAnnounced(
  core: SessionCore,
  prefix: string,
  queue: BackpressureQueue<AnnounceEvent>,
  closing: AbortSignal,
): Promise<void> {
  const active = new Map<string, readonly bigint[]>();
  const max = core.options.maxAnnounced ?? MAX_ANNOUNCED;
  const request = new ClosableRequest(closing);
  try {
    const { r, w } = await request.open(core);
    if (closing.aborted) return;
    await w.write(concatBytes([
      encodeVarint(BidiType.Announce),
      encodeAnnounceRequest({ prefix: wirePrefix(prefix), excludeHop: core.origin }),
    ]));
    let ok: AnnounceOk | undefined;
    if (core.version === "moq-lite-05") {
      if (await r.done()) return;
      ok = decodeAnnounceOk(await r.message("ANNOUNCE_OK", MAX_CONTROL_MESSAGE));
    }
    while (!(await r.done())) {
      const m = decodeAnnounce(await r.message("ANNOUNCE", MAX_CONTROL_MESSAGE), core.version);
      const path = joinPath(prefix, m.suffix);
      if (!prefixCovers(prefix, path)) continue;
      const hops = ok && ok.hop !== 0n ? [...m.hops, ok.hop] : m.hops;
      if (m.active) {
        if (loopsThrough(hops, core.origin)) continue; // our own announcement reflected back
        if (active.has(path) && core.version === "moq-lite-04") {
          throw new DecodeError("invalid", `Duplicate active announcement "${path}"`);
        }
        // The wire allows 4096 bytes a suffix; no path longer than every other part takes is
        // remembered (65,536 of 4 KiB held 326 MiB of a session's heap).
        if (utf8Length(path) > MAX_PATH_BYTES) {
          core.stats.announcementsRefused++;
          core.log(
            "announce-long",
            `refusing the peer's announcement of a path over ${MAX_PATH_BYTES} bytes`,
          );
          continue;
        }
        if (core.policy.acceptAnnounce && !core.policy.acceptAnnounce(path, core.session)) {
          core.stats.announcementsRefused++;
          core.log("announce-refused", `refusing the peer's announcement "${path}"`);
          continue;
        }
        // The peer chooses how many: past the bound, new paths are refused (not remembered).
        if (!active.has(path) && active.size >= max) {
          core.stats.announcementsRefused++;
          core.log(
            "announce-bound",
            `refusing the peer's announcement "${path}": it has ${max} announced already`,
          );
          continue;
        }
        active.set(path, hops);
        await queue.push({ path, active: true, hops });
      } else if (active.delete(path)) {
        await queue.push({ path, active: false, hops: [] });
      }
    }
  } catch (err) {
    if (!closing.aborted) core.streamFailed("announce", err);
  } finally {
    request.release();
    request.close();
    // A finished announce stream means every broadcast it announced ended.
    for (const path of active.keys()) queue.push({ path, active: false, hops: [] });
    queue.end();
  }
}

const encoder = new TextEncoder();

// A path's length in UTF-8 bytes (a string of at most a third of the bound needs no encoding).
function utf8Length(path: string): number {
  return path.length * 3 <= MAX_PATH_BYTES ? path.length : encoder.encode(path).length;
}
