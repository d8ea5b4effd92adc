/** The IETF control stream: each message read and handed to the module that owns it. */
import { DecodeError, type StreamReader } from "../../wire/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { MoqError } from "../errors.ts";
import { type IetfCore, SubscribeErrorCode } from "./core.ts";
import { Msg, readControl } from "./control.ts";
import * as m from "./messages.ts";
import {
  pathOfRequest,
  peerPublishes,
  peerWithdraws,
  tellOnControl,
  unsubscribeNamespace,
  watchNamespaces,
  watchRefusal,
} from "./namespaces.ts";
import { finishUpstream, subscribeOk } from "./receive.ts";
import { serveSubscribe } from "./serve.ts";
import { serveFetch } from "./fetch.ts";
import { serveTrackStatus } from "./track_status.ts";
import { applyUpdate } from "./update.ts";
import { decodeSubscribeUpdate } from "./update_codec.ts";
import { decodeFetch, decodeFetchCancel, decodeFetchOk } from "./fetch_codec.ts";
import { IetfCode } from "./version.ts";
import { refusalCode } from "./refusal.ts";
import { decodePublish, refusePublish14 } from "./publish_codec.ts";
import { peerPushes } from "./publish.ts";

/** Control messages of draft 14 whose numbers draft 16 left unused on the control stream. */
const DRAFT_14_ONLY: ReadonlySet<number> = new Set([
  Msg.PublishNamespaceError,
  Msg.TrackStatus,
  Msg.TrackStatusError,
  Msg.SubscribeNamespace,
  Msg.SubscribeNamespaceOk,
  Msg.SubscribeNamespaceError,
  Msg.UnsubscribeNamespace,
  Msg.FetchError,
  Msg.PublishError,
]);

/**
 * Reads the control stream until it ends. A malformed message (a
 * `DecodeError`, the peer's bytes) is the peer's protocol violation; any
 * other failure while a message is acted on is ours, logged and closed as
 * an internal error, never blamed on the peer.
 */
export async function controlLoop(core: IetfCore, r: StreamReader): Promise<void> {
  let acting = false;
  try {
    for (;;) {
      acting = false;
      const msg = await readControl(r, core.draft);
      if (core.isClosed) return;
      if (!msg) return core.close(IetfCode.ProtocolViolation, "control stream ended");
      acting = true;
      dispatch(core, msg.type, msg.body);
    }
  } catch (err) {
    if (core.isClosed) return;
    if (err instanceof DecodeError) {
      core.violation(IetfCode.ProtocolViolation, `malformed control message: ${errorText(err)}`);
    } else if (acting) {
      core.log(
        "internal",
        `moq-transport: ${core.remote}: control message failed: ${errorText(err)}`,
      );
      core.close(IetfCode.Internal, "internal error");
    } else core.close(IetfCode.ProtocolViolation, "control stream failed");
  }
}

function dispatch(core: IetfCore, type: number, body: Uint8Array): void {
  const d = core.draft;
  // From draft 17 the setup stream carries nothing after SETUP but GOAWAY.
  if (d >= 17 && type !== Msg.GoAway) {
    return core.violation(IetfCode.ProtocolViolation, `unexpected message ${type} after SETUP`);
  }
  // Draft 16 moved namespace subscriptions to their own streams and folded the per-request
  // answers into REQUEST_OK (0x07) / REQUEST_ERROR (0x05); the numbers it freed are invalid.
  if (d >= 16 && DRAFT_14_ONLY.has(type)) {
    return core.violation(IetfCode.ProtocolViolation, `unexpected control message ${type}`);
  }
  switch (type) {
    case Msg.Subscribe: {
      const s = m.decodeSubscribe(body, d);
      if (core.takePeerId(s.requestId)) core.spawn(serveSubscribe(core, s));
      return;
    }
    case Msg.Unsubscribe:
      core.served.get(m.decodeRequestId(body, "UNSUBSCRIBE", d))?.abort();
      return;
    case Msg.SubscribeUpdate: {
      const u = decodeSubscribeUpdate(body, d);
      if (core.takePeerId(u.requestId)) {
        core.spawn(applyUpdate(core, u.existing ?? 0n, u, (bytes) => core.write(bytes)));
      }
      return;
    }
    case Msg.PublishNamespace: {
      const req = m.decodeNamespaceRequest(body, "PUBLISH_NAMESPACE", d);
      if (core.takePeerId(req.requestId)) peerPublishes(core, req);
      return;
    }
    case Msg.PublishNamespaceDone: {
      // Draft 14 names the namespace, draft 16 the PUBLISH_NAMESPACE's request id.
      const path = d >= 16
        ? pathOfRequest(core, m.decodeRequestId(body, "PUBLISH_NAMESPACE_DONE", d))
        : m.decodeNamespace(body, "PUBLISH_NAMESPACE_DONE", d);
      if (path !== undefined) peerWithdraws(core, path);
      return;
    }
    case Msg.SubscribeNamespace:
      return subscribeNamespace(core, body);
    case Msg.UnsubscribeNamespace:
      unsubscribeNamespace(core, body);
      return;
    case Msg.SubscribeOk:
      return subscribeOk(core, m.decodeSubscribeOk(body, d));
    case Msg.FetchOk: {
      const id = decodeFetchOk(body, d).requestId;
      core.ourFetches.get(id)?.answer.resolve({ type, body });
      return;
    }
    case Msg.FetchError: { // draft 14 (draft 16 refuses a FETCH with REQUEST_ERROR)
      const id = m.decodeRequestError(body, d).requestId;
      core.ourFetches.get(id)?.answer.resolve({ type, body });
      return;
    }
    case Msg.SubscribeError: // draft 16: REQUEST_ERROR, for any of our requests
      return requestRefused(core, type, body);
    case Msg.PublishDone:
      return publishDone(core, body);
    case Msg.PublishOk: // draft 16: the relay took our PUBLISH (draft 14's is never sent)
      if (d < 16) return core.violation(IetfCode.ProtocolViolation, "PUBLISH_OK unasked");
      core.ourPushes.get(m.decodeLeadingRequestId(body, d))?.({ type, body });
      return;
    case Msg.Publish: {
      // Draft 16 (draft 14's inline PUBLISH is not read: refused unread).
      if (d < 16) {
        const id = m.decodeLeadingRequestId(body, d);
        if (!core.takePeerId(id)) return;
        return void core.write(refusePublish14(id, d));
      }
      const p = decodePublish(body, d);
      if (core.takePeerId(p.requestId)) peerPushes(core, p, (bytes) => void core.write(bytes));
      return;
    }
    case Msg.MaxRequestId: {
      const max = m.decodeRequestId(body, "MAX_REQUEST_ID", d);
      if (max < core.peerGrant) {
        return core.violation(IetfCode.ProtocolViolation, "MAX_REQUEST_ID went down");
      }
      core.peerGrant = max;
      return;
    }
    case Msg.GoAway:
      core.resolveGoaway(m.decodeGoaway(body, d));
      return;
    case Msg.Fetch: {
      const f = decodeFetch(body, d);
      if (core.takePeerId(f.requestId)) core.spawn(serveFetch(core, f));
      return;
    }
    case Msg.FetchCancel:
      core.fetches.get(decodeFetchCancel(body, d))?.abort();
      return;
    case Msg.TrackStatusRequest: {
      const s = m.decodeSubscribe(body, d);
      if (core.takePeerId(s.requestId)) core.spawn(serveTrackStatus(core, s));
      return;
    }
    case Msg.PublishNamespaceOk: // draft 16: REQUEST_OK
    case Msg.PublishNamespaceError:
    case Msg.PublishNamespaceCancel:
    case Msg.SubscribeNamespaceOk:
    case Msg.SubscribeNamespaceError:
    case Msg.RequestsBlocked:
      return;
    default:
      core.violation(IetfCode.ProtocolViolation, `unexpected control message ${type}`);
  }
}

// A draft 14 SUBSCRIBE_NAMESPACE on the control stream: refused, or answered OK and then watched.
function subscribeNamespace(core: IetfCore, body: Uint8Array): void {
  const d = core.draft;
  const req = m.decodeNamespaceRequest(body, "SUBSCRIBE_NAMESPACE", d, true);
  if (!core.takePeerId(req.requestId)) return;
  const refused = watchRefusal(core, req.path);
  if (refused) {
    void core.write(m.requestError(
      "subscribe-namespace",
      { requestId: req.requestId, code: refusalCode(refused, d), reason: refused },
      d,
    ));
    return;
  }
  // The OK goes first: the namespaces already announced follow it at once.
  void core.write(m.requestOk("subscribe-namespace", req.requestId, d));
  watchNamespaces(core, req, (e) => tellOnControl(core, e));
}

// A refusal of one of our requests: a FETCH is answered, an upstream SUBSCRIBE ends refused.
function requestRefused(core: IetfCore, type: number, body: Uint8Array): void {
  const e = m.decodeRequestError(body, core.draft);
  const fetch = core.ourFetches.get(e.requestId);
  if (fetch) return fetch.answer.resolve({ type, body });
  const push = core.ourPushes.get(e.requestId);
  if (push) return push({ type, body });
  const u = core.upstreamById.get(e.requestId);
  if (!u) return;
  const kind = e.code === SubscribeErrorCode.Unauthorized ? "unauthorized" : "not_found";
  finishUpstream(core, u, new MoqError(kind, `Subscribe refused: ${e.reason} (${e.code})`));
}

// PUBLISH_DONE for one of our upstream subscriptions: it finishes once its groups are in.
function publishDone(core: IetfCore, body: Uint8Array): void {
  const done = m.decodePublishDone(body, core.draft);
  const u = core.upstreamById.get(done.requestId);
  if (!u) return;
  u.done = true;
  u.sub._accept();
  u.sub._publisherDone = true;
  u.sub._maybeFinish(250);
}
