/**
 * The state one IETF session's modules share: the transport, the control
 * stream, request ids both ways, and the tables the peer fills (each
 * bounded). The public face is `IetfSession`; the protocol work lives in the
 * modules beside this one, each taking the core.
 */
import type { Session, SessionCloseInfo } from "../../transport/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { type Announcement, Announcer } from "../announcer.ts";
import { MoqError } from "../errors.ts";
import { MoqStats } from "../stats.ts";
import type { Sender } from "../sender.ts";
import type { MoqPeer } from "../peer.ts";
import { DEFAULT_MAX_BUFFERED, ReceiveBudget, type TrackProducer } from "../track/mod.ts";
import type { OurFetch } from "./fetch_client.ts";
import {
  type MoqAcceptOptions,
  type SessionPolicy,
  SessionSends,
  type Subscription,
} from "../session/mod.ts";
import { type ControlMessage, frameControl, Msg } from "./control.ts";
import { encodeRequestId } from "./messages.ts";
import { IetfCode, type IetfDraft } from "./version.ts";

/** Request ids granted to the peer at a time (MAX_REQUEST_ID steps). */
export const REQUEST_ID_WINDOW = 1000n;
/** The most subscriptions one peer may have us serve at once. */
export const MAX_SERVED_SUBSCRIPTIONS = 1024;
/** The most namespaces one peer may publish to us. */
export const MAX_PEER_NAMESPACES = 1024;
/** The most FETCHes one peer may have us serve at once. */
export const MAX_SERVED_FETCHES = 64;
/** The most groups one FETCH is answered with (a longer range ends early, said in FETCH_OK). */
export const MAX_FETCH_GROUPS = 1024;
/** The most TRACK_STATUS requests one peer may have us answer at once. */
export const MAX_STATUS_REQUESTS = 64;
/** The most tracks one peer may have pushed to us (PUBLISH) at once. */
export const MAX_PUSHED_TRACKS = 1024;
/** The most SUBSCRIBE_NAMESPACE prefixes one peer may hold. */
export const MAX_NAMESPACE_SUBSCRIPTIONS = 64;

/**
 * The SUBSCRIBE_ERROR codes read or sent outside the refusal table (refusal.ts): the same in
 * drafts 14, 16 and 20.
 */
export const SubscribeErrorCode = {
  Internal: 0x0,
  Unauthorized: 0x1,
} as const;

/** One key per track: its path and name, unambiguously. */
export function trackKey(path: string, track: string): string {
  return `${path.length}:${path}${track}`;
}

/** One of our subscriptions to the peer, by request id and (once known) track alias. */
export interface Upstream {
  /** The subscription the application iterates. */
  readonly sub: Subscription;
  /** Our SUBSCRIBE's request id. */
  readonly requestId: bigint;
  /** The alias SUBSCRIBE_OK named. */
  alias: bigint | undefined;
  /** The publisher finished it (PUBLISH_DONE) or it was refused: no UNSUBSCRIBE is owed. */
  done: boolean;
  /** Draft 17 on: ends our side of the subscription's stream (the unsubscribe). */
  cancel?: () => void;
  /** The TIMESCALE its SUBSCRIBE_OK declared (draft 17 on), for the objects' timestamps. */
  timescale?: number;
  /** A track the peer pushed (PUBLISH): its key in `IetfCore.pushed`. */
  pushKey?: string;
  /** A pushed track was taken by a subscription (until then its streams are stopped unread). */
  claimed?: boolean;
  /** A pushed track: asks the publisher to forward it, from `start` (false: out of request ids). */
  resume?: (start?: number) => boolean;
}

/** A subscription we serve, as a joining FETCH and SUBSCRIBE_UPDATE see it. */
export interface ServedSub {
  /** The subscription's path. */
  readonly path: string;
  /** Its track. */
  readonly track: string;
  /** The source it is served from. */
  readonly producer: TrackProducer;
  /** Its filter asked for the largest object (the only one a joining FETCH may join). */
  readonly largestFilter: boolean;
  /** The largest location when it started (undefined: the track had no group). */
  readonly largest: { readonly group: number; readonly object: number } | undefined;
  /** Subscriber priority, written in each group's header. */
  priority: number;
  /** Objects are sent (false: the subscription is paused, groups pass unsent). */
  forward: boolean;
  /** Groups below it are not sent. */
  startGroup: number;
  /** Groups above it are not sent (undefined: open-ended). */
  endGroup: number | undefined;
  /** Told after an update changed it (a paused pushed track waits on it). */
  changed?: () => void;
}

/** The shared state of one IETF session. */
export class IetfCore {
  /** The session's public face (what policy hooks are handed). */
  readonly session: MoqPeer;
  /** The transport session. */
  readonly transport: Session;
  /** The negotiated draft. */
  readonly draft: IetfDraft;
  /** The session's options. */
  readonly options: MoqAcceptOptions;
  /** Counters for metrics. */
  readonly stats: MoqStats = new MoqStats();
  /** The broadcasts we offer the peer. */
  readonly announcer: Announcer;
  /** The hooks in force (admission may replace the options' own). */
  policy: SessionPolicy;
  /** The client's URL: the transport's, or the setup PATH. */
  url: URL | undefined;
  /** The control stream's send half, once set up. */
  control: Sender | undefined;
  /** Why the session ended, when we ended it. */
  closeInfo: SessionCloseInfo | undefined;
  /** Aborts when the session ends. */
  readonly shutdown = new AbortController();
  /** Resolves the session's `goaway`. */
  resolveGoaway: (uri: string) => void = () => {};
  /** The peer's namespaces as announcements (what the relay routes). */
  readonly peerNamespaces = new Announcer();
  /** The peer's namespaces we hold, by path, with the request that published each. */
  readonly peerAnnouncements = new Map<string, { announcement: Announcement; id: bigint }>();
  /** The peer's namespace subscriptions by request id. */
  readonly namespaceSubs = new Map<bigint, { prefix: string; stop: () => void }>();
  /** Draft 14: our paths the peer was sent PUBLISH_NAMESPACE for, with that request's id. */
  readonly toldPaths = new Map<string, bigint>();
  /** Our subscriptions to the peer by request id. */
  readonly upstreamById = new Map<bigint, Upstream>();
  /** The same by track alias, once SUBSCRIBE_OK named it. */
  readonly upstreamByAlias = new Map<bigint, Upstream>();
  /** Draft 16: our PUBLISHes awaiting the relay's answer, by request id. */
  readonly ourPushes = new Map<bigint, (answer: ControlMessage) => void>();
  /** The tracks the peer pushed (PUBLISH), by `trackKey`. */
  readonly pushed = new Map<string, Upstream>();
  /** Resolved (and replaced) whenever a track alias becomes known. */
  aliasWake: PromiseWithResolvers<void> = Promise.withResolvers<void>();
  /** Payload bytes of the groups being received now, under `maxBufferedBytes`. */
  readonly budget: ReceiveBudget;
  /** Payload bytes of the groups being sent now, across the subscriptions we serve. */
  readonly sends: SessionSends = new SessionSends(() => this.policy.maxSessionBytesInFlight);
  /** The subscriptions we serve the peer, by its request id. */
  readonly served = new Map<bigint, AbortController>();
  /** Draft 16: the tracks we serve the peer a subscription to (`trackKey`), one each. */
  readonly servedTracks = new Set<string>();
  /** The subscriptions we serve as updates and joining FETCHes see them, by request id. */
  readonly servedSubs = new Map<bigint, ServedSub>();
  /** The peer let a FETCH of ours go unanswered: it is not asked again. */
  fetchUnanswered = false;
  /** Our FETCHes to the peer, by request id (bounded as our requests are: by us). */
  readonly ourFetches = new Map<bigint, OurFetch>();
  /** The FETCHes we serve the peer, by its request id. */
  readonly fetches = new Map<bigint, AbortController>();
  /** TRACK_STATUS requests being answered now. */
  statusRequests = 0;
  /** We dialed the session (the client: our request ids are even, the peer's odd). */
  readonly client: boolean;
  /** The peer's next request id, and the bound we granted it. */
  peerNextId: bigint;
  grantedToPeer: bigint = REQUEST_ID_WINDOW;
  /** Our next request id, and the bound the peer granted us. */
  ourNextId: bigint;
  peerGrant = 0n;
  readonly #logged = new Set<string>();

  /** The core of `session` on `transport`, speaking `draft`. */
  constructor(
    session: MoqPeer,
    transport: Session,
    draft: IetfDraft,
    options: MoqAcceptOptions,
    client = false,
  ) {
    this.client = client;
    this.peerNextId = client ? 1n : 0n;
    this.ourNextId = client ? 0n : 1n;
    this.session = session;
    this.transport = transport;
    this.draft = draft;
    this.budget = new ReceiveBudget(
      options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED,
      options.timers,
    );
    this.options = options;
    this.policy = options;
    this.announcer = options.announcer ?? new Announcer();
    this.url = transport.url;
  }

  /** True once the session ended. */
  get isClosed(): boolean {
    return this.shutdown.signal.aborted;
  }

  /** The peer's address. */
  get remote(): string {
    return this.transport.remote;
  }

  /** Ends the session with a code and reason (idempotent). */
  close(code: number, reason: string): void {
    if (this.isClosed) return;
    this.closeInfo = { code, reason };
    this.transport.close(code, reason);
    this.end();
  }

  /** Releases everything the session holds, once, however it ended. */
  end(): void {
    if (this.shutdown.signal.aborted) return;
    this.shutdown.abort();
    this.budget.close(new MoqError("closed", "Session closed"));
    for (const sub of this.namespaceSubs.values()) sub.stop();
    this.namespaceSubs.clear();
    for (const a of this.peerAnnouncements.values()) a.announcement.withdraw();
    this.peerAnnouncements.clear();
    for (const c of this.served.values()) c.abort();
    this.served.clear();
    this.servedSubs.clear();
    this.servedTracks.clear();
    for (const c of this.fetches.values()) c.abort();
    this.fetches.clear();
    for (const f of this.ourFetches.values()) {
      const e = new MoqError("closed", "Session closed");
      f.answer.reject(e);
      f.stream.reject(e);
    }
    this.ourFetches.clear();
    for (const u of this.upstreamById.values()) {
      u.done = true;
      u.sub._end(new MoqError("closed", "Session closed"));
    }
    this.upstreamById.clear();
    this.upstreamByAlias.clear();
    this.pushed.clear();
    this.aliasWake.resolve();
  }

  /** A peer that broke the protocol loses the session, with the reason in the close. */
  violation(code: number, why: string): void {
    this.stats.protocolErrors++;
    this.log("violation", `moq-transport: ${this.remote}: ${why}`);
    this.close(code, why.slice(0, 120));
  }

  /** Logs a line, once per kind per session. */
  log(kind: string, line: string): void {
    if (this.#logged.has(kind)) return;
    this.#logged.add(kind);
    (this.options.log ?? console.warn)(line);
  }

  /** Counts received bytes (a `StreamReader`'s counter). */
  readonly count = (n: number): void => {
    this.stats.bytesReceived += n;
  };

  /** Runs a task of the session; its failure is logged once, never thrown. */
  spawn(task: Promise<void>): void {
    task.catch((err) => {
      if (!this.isClosed) this.log("task", `moq-transport: ${this.remote}: ${errorText(err)}`);
    });
  }

  /** Writes a framed control message; a failed control stream ends the session. */
  async write(bytes: Uint8Array): Promise<void> {
    if (!this.control || this.isClosed) return;
    try {
      await this.control.write(bytes);
    } catch {
      this.close(IetfCode.Internal, "control stream failed");
    }
  }

  /** Our next request id when the peer's grant allows one; undefined when blocked. */
  takeOurId(): bigint | undefined {
    const id = this.ourNextId;
    if (id >= this.peerGrant) {
      this.log(
        "blocked",
        `moq-transport: ${this.remote}: out of request ids (the peer granted ${this.peerGrant})`,
      );
      return undefined;
    }
    this.ourNextId += 2n;
    return id;
  }

  /** Sends a request on the control stream under our next id; undefined when blocked. */
  sendRequest(encode: (id: bigint) => Uint8Array): bigint | undefined {
    const id = this.takeOurId();
    if (id !== undefined) void this.write(encode(id));
    return id;
  }

  /**
   * Takes the peer's request id: even (odd when we are the client), below our grant (topped up as it goes;
   * draft 17 on has no grant), and on draft 14, whose requests share the
   * control stream, in order. Later drafts carry requests on streams of their
   * own, which may arrive in any order.
   */
  takePeerId(id: bigint): boolean {
    const parity = this.client ? 1n : 0n;
    const inOrder = this.draft >= 16 ? id % 2n === parity : id === this.peerNextId;
    if (!inOrder || (this.draft < 17 && id >= this.grantedToPeer)) {
      this.violation(IetfCode.InvalidRequestId, `request id ${id} (expected ${this.peerNextId})`);
      return false;
    }
    if (id >= this.peerNextId) this.peerNextId = id + 2n;
    if (this.draft < 17 && this.grantedToPeer - id < REQUEST_ID_WINDOW / 2n) {
      this.grantedToPeer += REQUEST_ID_WINDOW;
      void this.write(
        frameControl(
          Msg.MaxRequestId,
          encodeRequestId(this.grantedToPeer, this.draft),
          this.draft,
        ),
      );
    }
    return true;
  }
}
