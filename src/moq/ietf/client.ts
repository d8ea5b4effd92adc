/**
 * The client role: sluice dials an IETF relay and publishes through it. The
 * setup from the client's side, and our namespaces told to the relay
 * unasked (`PUBLISH_NAMESPACE`, as a relay such as Cloudflare's or
 * moq-relay expects), each withdrawn when its broadcast ends.
 */
import type { Session } from "../../transport/mod.ts";
import { StreamReader } from "../../wire/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { timeoutSignal } from "../../timers/mod.ts";
import type { AnnounceEvent } from "../announcer.ts";
import { MoqError } from "../errors.ts";
import { Sender } from "../sender.ts";
import type { MoqAcceptOptions } from "../session/mod.ts";
import type { IetfCore } from "./core.ts";
import { frameControl, Msg, readControl } from "./control.ts";
import * as m from "./messages.ts";
import { tellOnControl, untilEnd, watchNamespaces } from "./namespaces.ts";
import { IETF_VERSION, IetfCode, type IetfDraft } from "./version.ts";
import { IetfSession } from "./ietf_session.ts";
import type { OpenTracks } from "./push.ts";

/** Options for {@linkcode connectIetf}. */
export interface IetfConnectOptions extends MoqAcceptOptions {
  /**
   * The publisher's open tracks, each pushed to the relay with PUBLISH
   * (drafts 16 and 20; at most `MAX_OUR_PUSHES`, 1024, at once) as well
   * as announced. Default: none pushed, the relay SUBSCRIBEs.
   */
  readonly push?: OpenTracks;
}

/** The request id under which our own announcer is followed for the relay (never a peer's). */
const OWN_NAMESPACES = -2n;

/**
 * Our side of the setup: drafts 14 and 16 open the control stream with
 * CLIENT_SETUP and read SERVER_SETUP; draft 20 sends SETUP on a stream of its
 * own and reads the server's. On native QUIC the URL's path and query go in
 * the PATH option (the relay reads a `jwt` there). Returns the reader of the
 * control stream (draft 20: the server's setup stream), or throws.
 */
export async function connectSetup(core: IetfCore, timeoutMs: number): Promise<StreamReader> {
  const d = core.draft;
  const params: m.Parameters = new Map();
  const url = core.transport.url;
  if (core.transport.transport === "quic" && url) {
    params.set(m.SetupParam.Path, new TextEncoder().encode(`${url.pathname}${url.search}`));
  }
  const timeout = timeoutSignal(timeoutMs, core.options.timers);
  // A deadline that passed before a step began fails that step at once, rather than never.
  const within = <T>(p: Promise<T>): Promise<T> =>
    Promise.race([
      p,
      new Promise<never>((_, reject) => {
        const fail = () => reject(new MoqError("protocol_violation", "setup timed out"));
        if (timeout.aborted) fail();
        else timeout.addEventListener("abort", fail, { once: true });
      }),
    ]);
  if (d >= 17) {
    const ours = await core.transport.openUni();
    core.control = new Sender(ours.writable, core.stats);
    await core.control.write(frameControl(Msg.Setup, m.encodeSetupOptions(params, d), d));
    const theirs = await within(core.transport.acceptUni());
    if (!theirs) throw new MoqError("closed", "Session closed during setup");
    const r = new StreamReader(theirs.readable, core.count);
    const first = await within(readControl(r, d));
    if (first?.type !== Msg.Setup) {
      throw new MoqError("protocol_violation", "The relay sent no SETUP");
    }
    m.decodeSetupOptions(first.body, d);
    core.peerGrant = 1n << 62n;
    return r;
  }
  const stream = await core.transport.openBidi();
  core.control = new Sender(stream.writable, core.stats);
  const r = new StreamReader(stream.readable, core.count);
  params.set(m.SetupParam.MaxRequestId, core.grantedToPeer);
  await core.control.write(
    frameControl(
      Msg.ClientSetup,
      m.encodeClientSetup({ versions: [IETF_VERSION[d]], params }, d),
      d,
    ),
  );
  const first = await within(readControl(r, d));
  if (first?.type !== Msg.ServerSetup) {
    throw new MoqError("protocol_violation", "The relay sent no SERVER_SETUP");
  }
  const setup = m.decodeServerSetup(first.body, d);
  if (setup.version !== IETF_VERSION[d]) {
    throw new MoqError(
      "protocol_violation",
      `The relay chose version ${setup.version.toString(16)}`,
    );
  }
  const grant = setup.params.get(m.SetupParam.MaxRequestId);
  core.peerGrant = typeof grant === "bigint" ? grant : 0n;
  return r;
}

/**
 * Tells the relay each broadcast of our announcer (that the policy lets it
 * see) with a PUBLISH_NAMESPACE of ours: drafts 14 and 16 on the control
 * stream (withdrawn with PUBLISH_NAMESPACE_DONE), draft 20 each on a stream
 * of its own (withdrawn by ending it).
 */
export function publishNamespaces(core: IetfCore): void {
  const d = core.draft;
  if (d < 17) {
    watchNamespaces(core, { requestId: OWN_NAMESPACES, path: "" }, (e) => tellOnControl(core, e));
    return;
  }
  const open = new Map<string, () => void>();
  const tell = (e: AnnounceEvent): void => {
    if (e.active && !open.has(e.path)) {
      const ended = new AbortController();
      open.set(e.path, () => ended.abort());
      core.spawn(namespaceRequest(core, e.path, ended.signal));
    } else if (!e.active) {
      open.get(e.path)?.();
      open.delete(e.path);
    }
  };
  watchNamespaces(core, { requestId: OWN_NAMESPACES, path: "" }, tell);
}

// Draft 20: one PUBLISH_NAMESPACE on its own stream, held open until `ended` (or the relay ends it).
async function namespaceRequest(core: IetfCore, path: string, ended: AbortSignal): Promise<void> {
  const d = core.draft;
  const id = core.takeOurId();
  if (id === undefined) return;
  const stream = await core.transport.openBidi();
  const out = new Sender(stream.writable, core.stats);
  const r = new StreamReader(stream.readable, core.count);
  const stop = (): void => r.cancel();
  ended.addEventListener("abort", stop, { once: true });
  try {
    await out.write(
      frameControl(Msg.PublishNamespace, m.encodeNamespaceRequest({ requestId: id, path }, d), d),
    );
    const answer = await readControl(r, d);
    if (answer?.type === Msg.RequestError) {
      const e = m.decodeRequestError(answer.body, d, id);
      core.log(
        "refused",
        `moq-transport: ${core.remote}: "${path}" refused: ${e.reason} (${e.code})`,
      );
      return;
    }
    await untilEnd(r);
  } catch (err) {
    if (!ended.aborted && !core.isClosed) {
      core.log("namespace", `moq-transport: ${core.remote}: "${path}": ${errorText(err)}`);
    }
  } finally {
    ended.removeEventListener("abort", stop);
    await out.close();
  }
}

/**
 * Starts an IETF MoQ Transport session as the client on `transport` (dialed
 * with the draft's ALPN or protocol: `moqt-20`, `moqt-16`, `moq-00`),
 * speaking `draft`: sets it up, then announces the options' announcer to the
 * relay and serves its SUBSCRIBEs and FETCHes through `serve`. Rejects (the
 * session closed) when the setup fails.
 *
 * @example
 * ```ts
 * const moq = await connectIetf(session, 20, { announcer, serve: () => track });
 * ```
 */
export async function connectIetf(
  transport: Session,
  draft: IetfDraft,
  options: IetfConnectOptions = {},
): Promise<IetfSession> {
  const moq = new IetfSession(transport, draft, options, true);
  try {
    await moq._setupClient(options.setupTimeout ?? 10_000);
  } catch (err) {
    moq.close(IetfCode.ProtocolViolation, "setup failed");
    throw err instanceof MoqError
      ? err
      : new MoqError("protocol_violation", `Setup failed: ${errorText(err)}`);
  }
  moq._start(undefined);
  // Drafts 16 and 20: each open track is also pushed (PUBLISH), sparing the relay a SUBSCRIBE.
  if (options.push) moq._push(options.push);
  return moq;
}
