/** Accepts the peer's streams and datagrams and hands each, by its type, to the part that handles it. */
import type { BidiStream, RecvStream } from "../../transport/mod.ts";
import { BidiType, decodeDatagram, UniType } from "../codec/mod.ts";
import { Sender } from "../sender.ts";
import type { SessionCore } from "./core.ts";
import { holdProbe, receiveGoaway } from "./probe_goaway.ts";
import { receiveGroup } from "./receive_group.ts";
import { serveAnnounce } from "./serve_announce.ts";
import { serveFetch, serveTrack } from "./serve_request.ts";
import { serveSubscribe } from "./serve_subscribe.ts";
import { CONTROL_SEND_ORDER } from "./send_order.ts";
import { receiveSetup } from "./setup.ts";

/** Handles the peer's uni streams (SETUP, groups) until the transport ends. */
export function acceptUniLoop(core: SessionCore): void {
  const t = core.transport;
  eachUntilEnd(
    () => t.acceptUni(),
    (stream) => core.spawn("uni", handleUni(core, stream)),
    (err) => core.streamFailed("accept", err),
  );
}

/** Handles the peer's bidi requests until the transport ends. */
export function acceptBidiLoop(core: SessionCore): void {
  const t = core.transport;
  eachUntilEnd(
    () => t.acceptBidi(),
    (stream) => core.spawn("bidi", handleBidi(core, stream)),
    (err) => core.streamFailed("accept", err),
  );
}

/** lite-05 datagrams: complete single-frame groups of a subscription (receive only). */
export function datagramLoop(core: SessionCore): void {
  const t = core.transport;
  if (!t.readDatagram) return;
  eachUntilEnd(
    () => t.readDatagram!(),
    (bytes) => receiveDatagram(core, bytes),
    (err) => core.streamFailed("datagram", err),
  );
}

/**
 * Hands each item `next` yields to `handle` until it yields undefined; the first failure (of
 * `next` or `handle`) goes to `failed` and ends it. A chain of callbacks rather than an async
 * loop: every session waits in three of these for its whole life, and between items this holds
 * the pending read and one reaction, where a suspended async function holds its frame, its
 * registers and two callbacks.
 */
function eachUntilEnd<T>(
  next: () => Promise<T | undefined>,
  handle: (item: T) => void,
  failed: (err: unknown) => void,
): void {
  const step = (item: T | undefined): void => {
    if (item === undefined) return;
    try {
      handle(item);
      next().then(step, failed);
    } catch (err) {
      failed(err);
    }
  };
  try {
    next().then(step, failed);
  } catch (err) {
    failed(err);
  }
}

function receiveDatagram(core: SessionCore, bytes: Uint8Array): void {
  core.stats.bytesReceived += bytes.length;
  let dg;
  try {
    dg = decodeDatagram(bytes);
  } catch (err) {
    core.streamFailed("datagram", err);
    return;
  }
  // Unknown ids and datagrams before TRACK_INFO are dropped silently (draft).
  const sub = core.subs.get(dg.subscribeId);
  if (!sub?.info) return;
  core.stats.datagramsReceived++;
  // A sequence that also came on a stream (or twice) is delivered once: the subscription dedupes.
  core.deliver(sub, {
    sequence: dg.sequence,
    frames: [dg.payload],
    timestamp: Number(dg.timestamp),
    exactTimestamp: dg.timestamp,
  });
  // It may have been the last group missing below the publisher's end.
  sub._maybeFinish(250);
}

async function handleUni(core: SessionCore, stream: RecvStream): Promise<void> {
  const r = core.reader(stream);
  try {
    const type = await r.u53("stream type");
    if (type === UniType.Group) return await receiveGroup(core, r);
    if (type === UniType.Setup && core.version === "moq-lite-05") {
      return await receiveSetup(core, r);
    }
    core.stats.protocolErrors++;
    core.log(`uni-type:${type}`, `ignoring unknown uni stream type ${type}`);
  } finally {
    r.cancel();
  }
}

async function handleBidi(core: SessionCore, stream: BidiStream): Promise<void> {
  const r = core.reader(stream);
  const w = new Sender(stream.writable, core.stats);
  try {
    const type = await r.u53("stream type");
    // Answers go before every group; a FETCH's answer is a group, sent at its priority.
    if (type !== BidiType.Fetch) stream.setSendOrder?.(CONTROL_SEND_ORDER);
    switch (type) {
      case BidiType.Announce:
        return await serveAnnounce(core, r, w);
      case BidiType.Subscribe:
        return await serveSubscribe(core, r, w);
      case BidiType.Fetch:
        return await serveFetch(core, r, w, (order) => stream.setSendOrder?.(order));
      case BidiType.Probe:
        return await holdProbe(r, w);
      case BidiType.Goaway:
        return await receiveGoaway(core, r, w);
      case BidiType.Track:
        if (core.version === "moq-lite-05") return await serveTrack(core, r, w);
    }
    core.stats.protocolErrors++;
    core.log(`bidi-type:${type}`, `refusing unknown bidi stream type ${type}`);
    w.abort();
  } catch (err) {
    w.abort();
    throw err;
  } finally {
    r.cancel();
  }
}
