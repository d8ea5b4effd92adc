/**
 * An IETF MoQ Transport session (drafts 14, 16 and 20) on any transport session,
 * the server side: it answers the client's setup, then serves the same
 * {@linkcode MoqPeer} surface as a moq-lite session. The peer's namespaces
 * become announcements, its SUBSCRIBEs are served from the application's
 * `TrackProducer`s (one subgroup stream per group, one object per frame),
 * and our subscriptions to its tracks yield groups. This class is the
 * public face and owns the lifecycle; the protocol work lives in the
 * modules beside it.
 */
import type { Session, SessionCloseInfo } from "../../transport/mod.ts";
import type { StreamReader } from "../../wire/mod.ts";
import type { AnnounceEvent, Announcement, Announcer } from "../announcer.ts";
import { MoqCode, MoqError, refusalReason } from "../errors.ts";
import { randomHopId } from "../hops.ts";
import type { MoqStats } from "../stats.ts";
import type { MoqPeer } from "../peer.ts";
import type { TrackInfo } from "../codec/mod.ts";
import { askAdmission } from "../session/mod.ts";
import type {
  FetchOptions,
  MoqAcceptOptions,
  ReceivedGroup,
  SessionPolicy,
  SubscribeOptions,
  Subscription,
} from "../session/mod.ts";
import { IetfCore } from "./core.ts";
import { frameControl, Msg } from "./control.ts";
import { controlLoop } from "./control_loop.ts";
import { encodeGoaway } from "./messages.ts";
import { announced, askNamespaces, askNamespacesOnControl } from "./namespaces.ts";
import { requestLoop } from "./requests.ts";
import { subscribe, uniLoop } from "./receive.ts";
import { acceptSetup } from "./setup.ts";
import { connectSetup, publishNamespaces } from "./client.ts";
import { fetchGroup } from "./fetch_client.ts";
import { type OpenTracks, pushTracks } from "./push.ts";
import { IetfCode, type IetfDraft, ietfDraftOf } from "./version.ts";

export {
  MAX_NAMESPACE_SUBSCRIPTIONS,
  MAX_PEER_NAMESPACES,
  MAX_SERVED_SUBSCRIPTIONS,
} from "./core.ts";

/** One IETF MoQ Transport session; see {@linkcode acceptIetf}. */
export class IetfSession implements MoqPeer {
  /** The negotiated draft, e.g. "moq-transport-14". */
  readonly version: string;
  /** The draft number. */
  readonly draft: IetfDraft;
  /** The underlying transport session. */
  readonly transport: Session;
  /** Our origin (hop) id (IETF sessions carry no hops; kept for the shared surface). */
  readonly origin: bigint;
  /** Resolves when the session ends. */
  readonly closed: Promise<SessionCloseInfo>;
  /** Resolves with the new URI when the peer sends GOAWAY. */
  readonly goaway: Promise<string>;
  readonly #core: IetfCore;
  // The control stream, read from _start on: nothing the peer sends is acted on before admission.
  #control: StreamReader | undefined;

  /** @internal Use {@linkcode acceptIetf}. */
  constructor(transport: Session, draft: IetfDraft, options: MoqAcceptOptions, client = false) {
    this.transport = transport;
    this.draft = draft;
    this.version = `moq-transport-${draft}`;
    this.origin = options.origin ?? randomHopId();
    const core = new IetfCore(this, transport, draft, options, client);
    this.#core = core;
    this.goaway = new Promise((resolve) => (core.resolveGoaway = resolve));
    this.closed = transport.closed.then((info) => {
      core.end();
      return core.closeInfo ?? info;
    });
    const signal = options.signal;
    if (signal) {
      const onAbort = () => this.close(IetfCode.None, "aborted");
      if (signal.aborted) queueMicrotask(onAbort);
      else signal.addEventListener("abort", onAbort, { once: true });
    }
  }

  /** Counters for metrics. */
  get stats(): MoqStats {
    return this.#core.stats;
  }

  /**
   * Group bytes (payload and a frame's cost) this session handed to its
   * transport that the transport has not taken yet, across every
   * subscription it serves (`SessionSends`).
   */
  get sendBytesInFlight(): number {
    return this.#core.sends.bytes;
  }

  /** The broadcasts we announce to the peer (sent when it subscribes to their namespace). */
  get announcer(): Announcer {
    return this.#core.announcer;
  }

  /** The URL the client dialed: the transport's, or the setup PATH. */
  get url(): URL | undefined {
    return this.#core.url;
  }

  /** The peer's address. */
  get remote(): string {
    return this.transport.remote;
  }

  /** True once the session ended. */
  get isClosed(): boolean {
    return this.#core.isClosed;
  }

  /**
   * Ends the session with an application code and reason (idempotent). The
   * lease and credential re-checks close any MoqPeer with moq-lite's
   * unauthorized code; an IETF peer is told IETF's (moq-lite's 6 would read
   * as KEY_VALUE_FORMATTING_ERROR).
   */
  close(code: number = IetfCode.None, reason = ""): void {
    this.#core.close(code === MoqCode.Unauthorized ? IetfCode.Unauthorized : code, reason);
  }

  /** @internal Runs the setup exchange; false when it failed (the session is then closed). */
  async _setup(timeoutMs: number): Promise<boolean> {
    this.#control = await acceptSetup(this.#core, timeoutMs);
    return this.#control !== undefined;
  }

  /** @internal Runs the client's side of the setup; throws when it fails. */
  async _setupClient(timeoutMs: number): Promise<void> {
    this.#control = await connectSetup(this.#core, timeoutMs);
  }

  /** @internal Pushes `tracks` to the relay (the client role, drafts 16 and 20). */
  _push(tracks: OpenTracks): void {
    pushTracks(this.#core, tracks);
  }

  /** @internal Serves with `policy` (admission's answer), then starts the data side. */
  _start(policy: SessionPolicy | undefined): void {
    const core = this.#core;
    if (policy) core.policy = { ...core.options, ...policy };
    // Read only now: a request sent before admission was decided would otherwise meet the
    // options without the admitted policy (its filters and checks) and be served unchecked.
    if (this.#control) core.spawn(controlLoop(core, this.#control));
    core.spawn(uniLoop(core));
    if (core.client) {
      // A publisher dialing a relay: it tells its namespaces unasked and serves what is asked.
      if (core.draft >= 16) core.spawn(requestLoop(core));
      publishNamespaces(core);
      return;
    }
    // Ask the peer for every namespace it publishes: a publisher may wait to be asked.
    if (core.draft >= 16) {
      core.spawn(requestLoop(core));
      core.spawn(askNamespaces(core));
    } else askNamespacesOnControl(core);
  }

  /**
   * Subscribes to the peer's track (SUBSCRIBE): iterate the result for
   * groups. It starts at the publisher's live edge unless `start` says
   * otherwise.
   */
  subscribe(path: string, track: string, options: SubscribeOptions = {}): Subscription {
    return subscribe(this.#core, path, track, options);
  }

  /**
   * Watches the peer's announcements under `prefix`: the initial set, then
   * changes; ends (reporting every still-active path ended) with the session.
   */
  announced(prefix = "", options: { signal?: AbortSignal } = {}): AsyncIterable<AnnounceEvent> {
    return announced(this.#core, prefix, options);
  }

  /** IETF tracks carry no moq-lite TRACK properties: rejects with "protocol". */
  trackInfo(_path: string, _track: string): Promise<TrackInfo> {
    return Promise.reject(new MoqError("protocol_violation", "TRACK requires moq-lite-05"));
  }

  /**
   * Fetches one group of the peer's track (a standalone FETCH of the whole
   * group); rejects "not_found" when it is refused, not there, or not
   * answered in time. The group is answered complete (`partial` is not
   * followed).
   */
  fetch(
    path: string,
    track: string,
    group: number,
    options: FetchOptions = {},
  ): Promise<ReceivedGroup> {
    return fetchGroup(this.#core, path, track, group, options);
  }

  /** Announces a broadcast to the peer (through this session's announcer). */
  announce(
    path: string,
    options: { signal?: AbortSignal; hops?: readonly bigint[] } = {},
  ): Announcement {
    return this.announcer.announce(path, options);
  }

  /** Tells the peer to move to `uri` (GOAWAY). */
  async sendGoaway(uri = ""): Promise<void> {
    await this.#core.write(frameControl(Msg.GoAway, encodeGoaway(uri, this.draft), this.draft));
  }
}

/**
 * Starts an IETF MoQ Transport session as the server on a transport whose
 * negotiated protocol is an IETF one (`moqt-20`, `moqt-16`, or `moq-00` for draft 14):
 * answers the client's setup, asks `admit`, then serves. Rejects with a
 * `MoqError` when the setup failed or the session was not admitted (it is
 * then closed).
 *
 * @example
 * ```ts
 * const moq = await acceptIetf(session, { serve: () => track });
 * ```
 */
export async function acceptIetf(
  session: Session,
  options: MoqAcceptOptions = {},
): Promise<IetfSession> {
  const draft = ietfDraftOf(session.protocol);
  if (draft === undefined) {
    session.close(IetfCode.ProtocolViolation, "unsupported protocol");
    throw new MoqError(
      "protocol_violation",
      `Cannot speak moq-transport over "${session.protocol}"`,
    );
  }
  const moq = new IetfSession(session, draft, options);
  if (!(await moq._setup(options.setupTimeout ?? 10_000))) {
    moq.close(IetfCode.ProtocolViolation, "setup failed");
    throw new MoqError("protocol_violation", "moq-transport setup failed");
  }
  let policy: SessionPolicy | undefined;
  if (options.admit) {
    const decision = await askAdmission(options.admit, moq);
    if (decision === false || decision instanceof Error) {
      // The peer is told why (a credential refused says which check failed), as HTTP tells it.
      moq.close(IetfCode.Unauthorized, refusalReason(decision));
      throw new MoqError("unauthorized", "Session not admitted");
    }
    if (decision !== true) policy = decision;
  }
  moq._start(policy);
  return moq;
}
