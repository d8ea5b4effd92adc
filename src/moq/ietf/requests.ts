/**
 * Requests on streams of their own: from draft 16 the peer's
 * SUBSCRIBE_NAMESPACE, and from draft 17 every request (SUBSCRIBE,
 * PUBLISH_NAMESPACE, FETCH, TRACK_STATUS...), each answered on its stream.
 */
import type { BidiStream } from "../../transport/mod.ts";
import { DecodeError, StreamReader } from "../../wire/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { Sender } from "../sender.ts";
import type { IetfCore } from "./core.ts";
import { Msg, readControl } from "./control.ts";
import * as m from "./messages.ts";
import {
  namespaceStream,
  publishNamespaceStream,
  subscribeNamespaceType,
  untilEnd,
} from "./namespaces.ts";
import { serveSubscribe } from "./serve.ts";
import { serveFetch } from "./fetch.ts";
import { serveTrackStatus } from "./track_status.ts";
import { applyUpdate } from "./update.ts";
import { decodeSubscribeUpdate } from "./update_codec.ts";
import { decodeFetch } from "./fetch_codec.ts";
import { IetfCode } from "./version.ts";
import { decodePublish, type Publish } from "./publish_codec.ts";
import { peerPushes } from "./publish.ts";
import { finishUpstream, publishDone } from "./receive.ts";

/** Draft 20: the REQUEST_UPDATEs of subscription `id`, on its stream, until the stream ends. */
export async function updates(
  core: IetfCore,
  id: bigint,
  r: StreamReader,
  write: (bytes: Uint8Array) => Promise<void>,
): Promise<void> {
  try {
    for (;;) {
      const msg = await readControl(r, core.draft);
      if (!msg || core.isClosed) return;
      if (msg.type !== Msg.SubscribeUpdate) {
        return core.violation(IetfCode.ProtocolViolation, `unexpected message ${msg.type}`);
      }
      const u = decodeSubscribeUpdate(msg.body, core.draft);
      if (!core.takePeerId(u.requestId)) return;
      await applyUpdate(core, id, u, write);
    }
  } catch (err) {
    if (err instanceof DecodeError) {
      core.violation(IetfCode.ProtocolViolation, `malformed update: ${errorText(err)}`);
    }
  }
}

// Draft 20: the peer's PUBLISH on its own stream; PUBLISH_DONE or the stream's end finishes
// it, and ending our side is the unsubscribe.
async function pushedStream(
  core: IetfCore,
  p: Publish,
  r: StreamReader,
  out: Sender,
): Promise<void> {
  if (!core.takePeerId(p.requestId)) return;
  const u = peerPushes(core, p, (bytes) => void out.write(bytes), () => void out.close());
  if (!u) return;
  try {
    for (;;) {
      const msg = await readControl(r, core.draft);
      if (!msg || core.isClosed) break;
      // The answer to the REQUEST_UPDATE that forwarded the track when it was claimed.
      if (msg.type === Msg.RequestOk || msg.type === Msg.RequestError) continue;
      if (msg.type !== Msg.PublishDone) {
        return core.violation(IetfCode.ProtocolViolation, `unexpected message ${msg.type}`);
      }
      m.decodePublishDone(msg.body, core.draft, p.requestId);
      publishDone(u);
    }
  } finally {
    if (!u.done) finishUpstream(core, u);
  }
}

/** The peer's bidirectional streams, each one request. */
export async function requestLoop(core: IetfCore): Promise<void> {
  for (;;) {
    const stream = await core.transport.acceptBidi();
    if (!stream || core.isClosed) return;
    core.spawn(requestStream(core, stream));
  }
}

async function requestStream(core: IetfCore, stream: BidiStream): Promise<void> {
  const d = core.draft;
  const r = new StreamReader(stream.readable, core.count);
  const out = new Sender(stream.writable, core.stats);
  try {
    const msg = await readControl(r, d);
    if (!msg) return;
    if (msg.type === subscribeNamespaceType(d)) return await namespaceStream(core, msg, r, out);
    if (d < 17) {
      return core.violation(IetfCode.ProtocolViolation, `unexpected stream type ${msg.type}`);
    }
    switch (msg.type) {
      case Msg.Subscribe: {
        const s = m.decodeSubscribe(msg.body, d);
        if (!core.takePeerId(s.requestId)) return;
        // The stream's end (or reset) is the unsubscribe; REQUEST_UPDATEs arrive on it meanwhile.
        const ended = new AbortController();
        const write = (bytes: Uint8Array): Promise<void> => out.write(bytes);
        updates(core, s.requestId, r, write).finally(() => ended.abort());
        return await serveSubscribe(core, s, { write, ended: ended.signal });
      }
      case Msg.PublishNamespace:
        return await publishNamespaceStream(core, msg, r, out);
      case Msg.Fetch: {
        const f = decodeFetch(msg.body, d);
        if (!core.takePeerId(f.requestId)) return;
        // A reset of the stream cancels the fetch; its FIN does not (the request was all of it).
        const ended = new AbortController();
        untilEnd(r).catch(() => ended.abort());
        return await serveFetch(core, f, {
          write: (bytes) => out.write(bytes),
          ended: ended.signal,
        });
      }
      case Msg.TrackStatusRequest: {
        const s = m.decodeSubscribe(msg.body, d);
        if (!core.takePeerId(s.requestId)) return;
        return await serveTrackStatus(core, s, { write: (bytes) => out.write(bytes) });
      }
      case Msg.Publish:
        return await pushedStream(core, decodePublish(msg.body, d), r, out);
      default:
        core.violation(IetfCode.ProtocolViolation, `unexpected request ${msg.type}`);
    }
  } catch (err) {
    if (err instanceof DecodeError) {
      core.violation(IetfCode.ProtocolViolation, `malformed request: ${errorText(err)}`);
    }
  } finally {
    r.cancel();
    await out.close();
  }
}
