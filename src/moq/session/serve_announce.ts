/** The serving side of announcements: tells the peer which of our broadcasts exist, and changes. */
import { BackpressureQueue, concatBytes, type StreamReader } from "../../wire/mod.ts";
import type { AnnounceEvent } from "../announcer.ts";
import {
  decodeAnnounceRequest,
  encodeAnnounce,
  encodeAnnounceOk,
  MAX_CONTROL_MESSAGE,
} from "../codec/mod.ts";
import { normalizePath, pathSuffix } from "../../path/mod.ts";
import { offerable } from "../hops.ts";
import type { Sender } from "../sender.ts";
import type { SessionCore } from "./core.ts";

function isVisible(core: SessionCore, event: AnnounceEvent, excludeHop: bigint): boolean {
  if (!offerable(event.hops, excludeHop, core.origin)) return false;
  return core.policy.announceFilter?.(event.path, core.session) ?? true;
}

function announceBytes(
  core: SessionCore,
  event: AnnounceEvent,
  prefix: string,
): Uint8Array<ArrayBuffer> {
  // lite-04 senders include themselves in the hop list; lite-05 ones carry it in ANNOUNCE_OK.
  const hops = !event.active
    ? []
    : core.version === "moq-lite-04"
    ? [...event.hops, core.origin].slice(-32)
    : event.hops.slice(-32);
  return encodeAnnounce({ active: event.active, suffix: pathSuffix(event.path, prefix), hops });
}

/** Serves an ANNOUNCE_REQUEST: our matching broadcasts, then their changes until the peer is done. */
export async function serveAnnounce(core: SessionCore, r: StreamReader, w: Sender): Promise<void> {
  const request = decodeAnnounceRequest(await r.message("ANNOUNCE_REQUEST", MAX_CONTROL_MESSAGE));
  const prefix = normalizePath(request.prefix);
  const updates = new BackpressureQueue<AnnounceEvent>(Infinity);
  const { snapshot, stop } = core.session.announcer.subscribe(prefix, (e) => updates.push(e));
  const visible = snapshot.filter((e) => isVisible(core, e, request.excludeHop));
  const sent = new Set<string>();
  // The peer FINs (or the session ends) when it no longer wants updates.
  const peerDone = (async () => {
    try {
      while (!(await r.done())) await r.bytes(1);
    } catch {
      // reset by the peer
    }
    updates.end();
  })();
  const onAbort = () => updates.end();
  core.abort.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const first: Uint8Array[] = [];
    if (core.version === "moq-lite-05") {
      first.push(encodeAnnounceOk({ hop: core.origin, activeCount: visible.length }));
    }
    for (const e of visible) {
      first.push(announceBytes(core, e, prefix));
      sent.add(e.path);
    }
    if (first.length) await w.write(concatBytes(first));
    for (;;) {
      const next = await updates.next();
      if (!next) break;
      // A broadcast whose new hop list passes through the peer is over as far as the peer goes.
      const e = next.active && !isVisible(core, next, request.excludeHop)
        ? { path: next.path, active: false, hops: [] }
        : next;
      const told = sent.has(e.path);
      // Only tell the peer about endings of broadcasts it was told about; a second
      // active is lite-05's restart (a new hop list), which lite-04 does not have.
      if (!e.active && !told) continue;
      if (e.active && told && core.version !== "moq-lite-05") continue;
      if (e.active) sent.add(e.path);
      else sent.delete(e.path);
      await w.write(announceBytes(core, e, prefix));
    }
  } finally {
    stop();
    core.abort.signal.removeEventListener("abort", onAbort);
    await w.close();
    r.cancel();
    await peerDone;
  }
}
