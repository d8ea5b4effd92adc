/**
 * A moq-lite session (lite-05 or lite-04, chosen by the transport's
 * negotiated protocol) on any {@linkcode Session}. Both roles run on every
 * session: it serves the peer's announce/track/subscribe/fetch requests from
 * the application's `TrackProducer`s and {@linkcode Announcer},
 * and lets the application subscribe to the peer's tracks and watch its
 * announcements. This class is the public face and owns the lifecycle; the
 * protocol work lives in the modules beside it.
 */
import type { Session, SessionCloseInfo } from "../../transport/mod.ts";
import type { Setup, TrackInfo, Version } from "../codec/mod.ts";
import { type AnnounceEvent, type Announcement, Announcer } from "../announcer.ts";
import { MoqCode, MoqError } from "../errors.ts";
import { normalizePath } from "../../path/mod.ts";
import { randomHopId } from "../hops.ts";
import { MoqStats } from "../stats.ts";
import type { MoqPeer } from "../peer.ts";
import { announced } from "./announced.ts";
import { SessionCore } from "./core.ts";
import { acceptBidiLoop, acceptUniLoop, datagramLoop } from "./dispatch.ts";
import { fetchGroup, requestTrackInfo } from "./fetch.ts";
import { sendGoaway } from "./probe_goaway.ts";
import { awaitSetup, startSetup } from "./setup.ts";
import { subscribe } from "./subscribe.ts";
import type { Subscription } from "./subscription.ts";
import type {
  FetchOptions,
  MoqSessionOptions,
  ReceivedGroup,
  SessionPolicy,
  SubscribeOptions,
} from "./types.ts";

function toVersion(protocol: string): Version {
  if (protocol === "moq-lite-05" || protocol === "moq-lite-04") return protocol;
  throw new MoqError("protocol_violation", `Cannot speak moq over protocol "${protocol}"`);
}

/** One moq-lite session; see {@linkcode connect} and {@linkcode accept}. */
export class MoqSession implements MoqPeer {
  /** The negotiated moq-lite version. */
  readonly version: Version;
  /** The underlying transport session. */
  readonly transport: Session;
  /** Which side we are. */
  readonly role: "client" | "server";
  /** Our origin (hop) id. */
  readonly origin: bigint;
  /** Counters for metrics. */
  readonly stats: MoqStats = new MoqStats();
  /** The broadcasts we announce to the peer. */
  readonly announcer: Announcer;
  /** Resolves when the session ends. */
  readonly closed: Promise<SessionCloseInfo>;
  /** Resolves with the new URI when the peer sends GOAWAY. */
  readonly goaway: Promise<string>;
  /** The peer's SETUP (lite-05), once received; without its Path, which is in {@linkcode url}. */
  peerSetup: Setup | undefined;
  readonly #core: SessionCore;

  /** @internal Use {@linkcode connect} or {@linkcode accept}. */
  constructor(transport: Session, role: "client" | "server", options: MoqSessionOptions) {
    this.transport = transport;
    this.role = role;
    this.version = toVersion(transport.protocol);
    this.origin = options.origin ?? randomHopId();
    this.announcer = options.announcer ?? new Announcer();
    const core = new SessionCore(this, options);
    this.#core = core;
    this.goaway = new Promise((resolve) => {
      core.resolveGoaway = resolve;
    });
    this.closed = transport.closed.then((info) => {
      core.shutdown(info);
      return core.closeInfo ?? info;
    });
    const signal = options.signal;
    if (signal) {
      const onAbort = () => this.close(MoqCode.None, "aborted");
      if (signal.aborted) queueMicrotask(onAbort);
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        this.closed.finally(() => signal.removeEventListener("abort", onAbort));
      }
    }
  }

  /** The URL the client dialed: the transport's, or (native QUIC lite-05) the SETUP Path. */
  get url(): URL | undefined {
    return this.#core.url;
  }

  /** The peer's address. */
  get remote(): string {
    return this.transport.remote;
  }

  /**
   * Group bytes (payload and a frame's cost) this session handed to its
   * transport that the transport has not taken yet, across every
   * subscription it serves (`SessionSends`).
   */
  get sendBytesInFlight(): number {
    return this.#core.sends.bytes;
  }

  /** True once the session ended. */
  get isClosed(): boolean {
    return this.#core.isClosed;
  }

  /** Ends the session with an application code and reason (idempotent). */
  close(code: number = MoqCode.None, reason = ""): void {
    if (this.#core.isClosed) return;
    this.#core.closeInfo = { code, reason };
    this.transport.close(code, reason);
    this.#core.shutdown({ code, reason });
  }

  /** @internal Sends our SETUP (lite-05) and starts the uni-stream loop. */
  _startUni(): void {
    startSetup(this.#core);
    acceptUniLoop(this.#core);
  }

  /** @internal Starts serving the peer's bidirectional requests. */
  _startBidi(): void {
    acceptBidiLoop(this.#core);
    if (this.version === "moq-lite-05" && this.transport.readDatagram) {
      datagramLoop(this.#core);
    }
  }

  /** @internal Serves the session with the policy `admit` returned (before {@linkcode _startBidi}). */
  _admitWith(policy: SessionPolicy): void {
    this.#core.policy = { ...this.#core.policy, ...policy };
  }

  /** @internal Waits for the peer's SETUP (lite-05) up to `ms`; false on timeout. */
  _awaitSetup(ms: number): Promise<boolean> {
    return awaitSetup(this.#core, ms);
  }

  /**
   * Subscribes to the peer's track. Iterate the result for groups; it starts
   * at the publisher's latest group unless `start` says otherwise.
   *
   * @example
   * ```ts
   * for await (const group of moq.subscribe("demo/feed", "records")) console.log(group.sequence);
   * ```
   */
  subscribe(path: string, track: string, options: SubscribeOptions = {}): Subscription {
    return subscribe(this.#core, path, track, options);
  }

  /** Asks the peer for a track's properties (lite-05 TRACK); rejects with MoqError("not_found"). */
  async trackInfo(path: string, track: string): Promise<TrackInfo> {
    if (this.version !== "moq-lite-05") {
      throw new MoqError("protocol_violation", "TRACK requires moq-lite-05");
    }
    return await requestTrackInfo(this.#core, normalizePath(path), track);
  }

  /**
   * Fetches one group of the peer's track, complete or (`partial`) from its
   * first frame on; rejects with MoqError("not_found").
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

  /**
   * Watches the peer's announcements under `prefix`: the initial set, then
   * changes. Ends when `signal` aborts, the peer finishes, or the session
   * ends (every still-active path is then reported ended).
   */
  announced(prefix = "", options: { signal?: AbortSignal } = {}): AsyncIterable<AnnounceEvent> {
    return announced(this.#core, prefix, options);
  }

  /** Tells the peer to move to `uri` (GOAWAY). */
  sendGoaway(uri = ""): Promise<void> {
    return sendGoaway(this.#core, uri);
  }
}
