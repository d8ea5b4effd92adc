/**
 * Namespaces both ways: the peer's PUBLISH_NAMESPACEs (and draft 16
 * NAMESPACE entries) become announcements the application watches, and the
 * peer's SUBSCRIBE_NAMESPACEs are answered from our announcer, draft 14 with
 * PUBLISH_NAMESPACE requests of ours, draft 16 with entries on its stream.
 */
import { DecodeError, StreamReader } from "../../wire/mod.ts";
import { normalizePath, pathProblem, pathSuffix } from "../../path/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import type { AnnounceEvent } from "../announcer.ts";
import { Sender } from "../sender.ts";
import { type IetfCore, MAX_NAMESPACE_SUBSCRIPTIONS, MAX_PEER_NAMESPACES } from "./core.ts";
import { type ControlMessage, frameControl, Msg, readControl } from "./control.ts";
import * as m from "./messages.ts";
import { refusalCode } from "./refusal.ts";
import { IetfCode } from "./version.ts";

/** Draft 14: asks the peer for every namespace it publishes, on the control stream. */
export function askNamespacesOnControl(core: IetfCore): void {
  core.sendRequest((id) =>
    frameControl(
      Msg.SubscribeNamespace,
      m.encodeNamespaceRequest({ requestId: id, path: "" }, core.draft, true),
      core.draft,
    )
  );
}

/** The type of SUBSCRIBE_NAMESPACE in `draft` (renumbered in draft 18). */
export function subscribeNamespaceType(draft: number): number {
  return draft >= 18 ? Msg.SubscribeNamespaceStream : Msg.SubscribeNamespace;
}

/** Answers the peer's PUBLISH_NAMESPACE: taken as an announcement, or refused. */
export function peerPublishes(core: IetfCore, req: m.NamespaceRequest): void {
  const d = core.draft;
  const refuse = (code: number, reason: string): void => {
    core.stats.announcementsRefused++;
    void core.write(
      m.requestError("publish-namespace", { requestId: req.requestId, code, reason }, d),
    );
  };
  const problem = admitNamespace(core, req.path, req.requestId);
  if (problem) return refuse(problem.code, problem.reason);
  void core.write(m.requestOk("publish-namespace", req.requestId, d));
}

/** Takes one of the peer's namespaces as an announcement; the refusal when it is not taken. */
export function admitNamespace(
  core: IetfCore,
  raw: string,
  id: bigint,
): { code: number; reason: string } | undefined {
  const problem = pathProblem(raw, false);
  if (problem) return { code: refusalCode("uninterested", core.draft), reason: problem };
  const path = normalizePath(raw);
  if (core.policy.acceptAnnounce && !core.policy.acceptAnnounce(path, core.session)) {
    return { code: refusalCode("unauthorized", core.draft), reason: "unauthorized" };
  }
  if (core.peerAnnouncements.has(path)) return undefined;
  if (core.peerAnnouncements.size >= MAX_PEER_NAMESPACES) {
    return { code: refusalCode("too-many", core.draft), reason: "too many namespaces" };
  }
  core.peerAnnouncements.set(path, { announcement: core.peerNamespaces.announce(path), id });
  return undefined;
}

/** The peer withdrew one of its namespaces. */
export function peerWithdraws(core: IetfCore, path: string): void {
  core.peerAnnouncements.get(path)?.announcement.withdraw();
  core.peerAnnouncements.delete(path);
}

/** The namespace the peer published with request `id` (draft 16 withdraws by id). */
export function pathOfRequest(core: IetfCore, id: bigint): string | undefined {
  for (const [path, a] of core.peerAnnouncements) if (a.id === id) return path;
  return undefined;
}

/**
 * Draft 16: our SUBSCRIBE_NAMESPACE for every prefix, on its own stream; the
 * NAMESPACE entries that come back on it are announcements like PUBLISH_NAMESPACEs.
 */
export async function askNamespaces(core: IetfCore): Promise<void> {
  const d = core.draft;
  const id = core.takeOurId();
  if (id === undefined) return;
  const stream = await core.transport.openBidi();
  const out = new Sender(stream.writable, core.stats);
  const r = new StreamReader(stream.readable, core.count);
  const mine = new Set<string>();
  try {
    await out.write(
      frameControl(
        subscribeNamespaceType(d),
        m.encodeNamespaceRequest({ requestId: id, path: "" }, d, true),
        d,
      ),
    );
    for (;;) {
      const msg = await readControl(r, d);
      if (!msg || core.isClosed) return;
      if (msg.type === Msg.RequestOk || msg.type === Msg.RequestError) continue;
      if (msg.type !== Msg.Namespace && msg.type !== Msg.NamespaceDone) {
        return core.violation(
          IetfCode.ProtocolViolation,
          `unexpected message ${msg.type} on a namespace stream`,
        );
      }
      const path = m.decodeNamespace(msg.body, "NAMESPACE", d);
      if (msg.type === Msg.NamespaceDone) {
        if (mine.delete(path)) peerWithdraws(core, path);
      } else if (!core.peerAnnouncements.has(path)) {
        // Taken like a PUBLISH_NAMESPACE (there is no request of its own to refuse).
        if (admitNamespace(core, path, -1n)) core.stats.announcementsRefused++;
        else mine.add(path);
      }
    }
  } catch (err) {
    if (err instanceof DecodeError) {
      core.violation(
        IetfCode.ProtocolViolation,
        `malformed namespace stream: ${errorText(err)}`,
      );
    }
  } finally {
    for (const path of mine) peerWithdraws(core, path);
    r.cancel();
    await out.close();
  }
}

/**
 * Watches the peer's announcements under `prefix`: the initial set, then
 * changes; ends (reporting every still-active path ended) with the session.
 */
export function announced(
  core: IetfCore,
  prefix: string,
  options: { signal?: AbortSignal },
): AsyncIterable<AnnounceEvent> {
  const ns = core.peerNamespaces;
  const shutdown = core.shutdown.signal;
  return {
    async *[Symbol.asyncIterator]() {
      const queue: AnnounceEvent[] = [];
      let wake: (() => void) | undefined;
      const { snapshot, stop } = ns.subscribe(prefix, (e) => {
        queue.push(e);
        wake?.();
      });
      queue.push(...snapshot);
      const active = new Set<string>();
      const onAbort = () => wake?.();
      shutdown.addEventListener("abort", onAbort);
      options.signal?.addEventListener("abort", onAbort);
      try {
        for (;;) {
          while (queue.length > 0) {
            const e = queue.shift()!;
            if (e.active) active.add(e.path);
            else active.delete(e.path);
            yield e;
          }
          if (shutdown.aborted || options.signal?.aborted) break;
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
        for (const path of active) yield { path, active: false, hops: [] };
      } finally {
        stop();
        shutdown.removeEventListener("abort", onAbort);
        options.signal?.removeEventListener("abort", onAbort);
      }
    },
  };
}

/** Why a new namespace subscription is refused (its prefix already followed, or the bound reached); undefined: taken. */
export function watchRefusal(
  core: IetfCore,
  prefix: string,
): "prefix-overlap" | "too-many" | undefined {
  if ([...core.namespaceSubs.values()].some((s) => s.prefix === prefix)) return "prefix-overlap";
  return core.namespaceSubs.size < MAX_NAMESPACE_SUBSCRIPTIONS ? undefined : "too-many";
}

/**
 * Follows our announcer under the request's prefix for the peer (what its
 * credential lets it see), handing the current set and then each change to `tell`.
 */
export function watchNamespaces(
  core: IetfCore,
  req: m.NamespaceRequest,
  tell: (e: AnnounceEvent) => void,
): void {
  const filtered = (e: AnnounceEvent): void => {
    if (core.isClosed) return;
    if (core.policy.announceFilter && !core.policy.announceFilter(e.path, core.session)) return;
    tell(e);
  };
  const { snapshot, stop } = core.announcer.subscribe(req.path, filtered);
  core.namespaceSubs.set(req.requestId, { prefix: req.path, stop });
  for (const e of snapshot) filtered(e);
}

/**
 * Drafts 14 and 16: each namespace goes to the peer as our own
 * PUBLISH_NAMESPACE request on the control stream.
 */
export function tellOnControl(core: IetfCore, e: AnnounceEvent): void {
  const d = core.draft;
  if (e.active && !core.toldPaths.has(e.path)) {
    const id = core.sendRequest((rid) =>
      frameControl(
        Msg.PublishNamespace,
        m.encodeNamespaceRequest({ requestId: rid, path: e.path }, d),
        d,
      )
    );
    if (id !== undefined) core.toldPaths.set(e.path, id);
  } else if (!e.active && core.toldPaths.has(e.path)) {
    // Draft 14 names the namespace, draft 16 the PUBLISH_NAMESPACE's request id.
    const id = core.toldPaths.get(e.path)!;
    core.toldPaths.delete(e.path);
    const body = d >= 16 ? m.encodeRequestId(id, d) : m.encodeNamespace(e.path, d);
    void core.write(frameControl(Msg.PublishNamespaceDone, body, d));
  }
}

/** UNSUBSCRIBE_NAMESPACE: draft 14 names the prefix; some peers send the request's id instead. */
export function unsubscribeNamespace(core: IetfCore, body: Uint8Array): void {
  let id: bigint | undefined;
  try {
    id = m.decodeRequestId(body, "UNSUBSCRIBE_NAMESPACE", core.draft);
  } catch {
    id = undefined;
  }
  if (id === undefined || !core.namespaceSubs.has(id)) {
    const prefix = m.decodeNamespace(body, "UNSUBSCRIBE_NAMESPACE", core.draft);
    id = [...core.namespaceSubs].find(([, s]) => s.prefix === prefix)?.[0];
  }
  if (id === undefined) return;
  core.namespaceSubs.get(id)?.stop();
  core.namespaceSubs.delete(id);
}

/**
 * Draft 16 on: the peer's SUBSCRIBE_NAMESPACE on its own stream (`msg`, the
 * stream's first message), answered there with entries named under the
 * prefix; the stream's end ends it.
 */
export async function namespaceStream(
  core: IetfCore,
  msg: ControlMessage,
  r: StreamReader,
  out: Sender,
): Promise<void> {
  const d = core.draft;
  let id: bigint | undefined;
  try {
    const req = m.decodeNamespaceRequest(msg.body, "SUBSCRIBE_NAMESPACE", d, true);
    if (!core.takePeerId(req.requestId)) return;
    // Names are sent relative to the prefix; writes keep their order on this stream.
    const told = new Set<string>();
    const tell = (e: AnnounceEvent): void => {
      const suffix = pathSuffix(e.path, req.path);
      if (e.active && !told.has(e.path)) {
        told.add(e.path);
        out.write(frameControl(Msg.Namespace, m.encodeNamespace(suffix, d), d)).catch(() => {});
      } else if (!e.active && told.delete(e.path)) {
        out.write(frameControl(Msg.NamespaceDone, m.encodeNamespace(suffix, d), d)).catch(
          () => {},
        );
      }
    };
    const refused = watchRefusal(core, req.path);
    if (refused) {
      await out.write(m.requestError(
        "subscribe-namespace",
        { requestId: req.requestId, code: refusalCode(refused, d), reason: refused },
        d,
      ));
      return;
    }
    const ok = out.write(m.requestOk("subscribe-namespace", req.requestId, d));
    // A client already told the relay every namespace unasked (PUBLISH_NAMESPACE): not twice.
    if (core.client) {
      await ok;
      return await untilEnd(r);
    }
    watchNamespaces(core, req, tell);
    id = req.requestId;
    await ok;
    await untilEnd(r);
  } finally {
    if (id !== undefined) {
      core.namespaceSubs.get(id)?.stop();
      core.namespaceSubs.delete(id);
    }
  }
}

/**
 * Draft 17 on: the peer's PUBLISH_NAMESPACE on its own stream, answered
 * there; the namespace is held until the stream ends (the withdrawal).
 */
export async function publishNamespaceStream(
  core: IetfCore,
  msg: ControlMessage,
  r: StreamReader,
  out: Sender,
): Promise<void> {
  const d = core.draft;
  const req = m.decodeNamespaceRequest(msg.body, "PUBLISH_NAMESPACE", d);
  if (!core.takePeerId(req.requestId)) return;
  const key = pathProblem(req.path, false) ? undefined : normalizePath(req.path);
  // A second stream for a namespace already held leaves the first in charge of it.
  const held = key !== undefined && core.peerAnnouncements.has(key);
  const problem = admitNamespace(core, req.path, req.requestId);
  if (problem) {
    core.stats.announcementsRefused++;
    await out.write(
      m.requestError("publish-namespace", { requestId: req.requestId, ...problem }, d),
    );
    return;
  }
  await out.write(m.requestOk("publish-namespace", req.requestId, d));
  try {
    await untilEnd(r);
  } finally {
    if (!held && key !== undefined) peerWithdraws(core, key);
  }
}

/** Reads a request stream to its end (its later messages are not acted on). */
export async function untilEnd(r: StreamReader): Promise<void> {
  while (!(await r.done())) await r.skip(r.buffered || 1);
}
