import { errorText } from "../../error_text/mod.ts";
import type { Verifier } from "../../auth/mod.ts";
import {
  accept,
  type Announcement,
  Announcer,
  connect,
  DeliveryTurns,
  MoqCode,
  MoqError,
  type MoqSession,
} from "../../moq/mod.ts";
import type { Session, SessionCloseInfo } from "../../transport/mod.ts";
import type { TrackPatterns } from "../../path/mod.ts";
import { type Admission, admitSession, DIALED_PEER, PEER_PARAMETER } from "./session_grants.ts";
import type { RelayCore } from "../routing/mod.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import type { Announcement as RouteAnnouncement, RouteChange } from "../routing/mod.ts";
import { leaveWhenUnused, type LiveSession, watchAnnouncements } from "./session_routes.ts";
import { firstRtt, startPing } from "./session_rtt.ts";
import {
  countClosed,
  countDatagrams,
  estimateBitrate,
  sampleRtt,
  type SessionLabels,
} from "./session_metrics.ts";
import {
  type RelayMoqContext,
  relayMoqOptions,
  relaySessionPolicy,
} from "./session_moq_options.ts";
import { startLease } from "./session_lease.ts";
import { type DialedPeer, type PeerGoaway, SelfDialError } from "./peer_session.ts";

/** Options of {@link RelaySessions}. */
export interface RelaySessionsOptions {
  /** Routing and fan-out. */
  readonly core: RelayCore;
  /** Metrics. */
  readonly metrics: RelayMetrics;
  /** Credential verifier; undefined admits every session. */
  readonly verifier: Verifier | undefined;
  /** GROUP_CACHE_SIZE: also each subscriber's queue bound before it is skipped forward. */
  readonly cacheSize: number;
  /** This relay's hop id: the origin of every session, so announcements never loop back. */
  readonly hopId: bigint;
  /** Clock in ms. */
  readonly now: () => number;
  /** RELAY_DATAGRAM_TRACKS: tracks whose single-frame groups go to clients as datagrams. */
  readonly datagramTracks?: TrackPatterns;
  /** RELAY_DELIVERY_TURN_MS: delivery per turn shared by every session's subscriptions (0: no turns). */
  readonly deliveryTurnMs?: number;
  /** Interval of the session RTT ping in ms (0 disables; default 10000). */
  readonly rttIntervalMs?: number;
  /** Longest wait for session bookkeeping at stop, ms (default 5000). */
  readonly stopTimeoutMs?: number;
  /** A peer's session sent GOAWAY (`uri` empty when it named no other relay). */
  readonly onPeerGoaway?: (goaway: PeerGoaway) => void;
  /** A peer dialed in and was admitted (by its name). */
  readonly onPeerAdmitted?: (name: string) => void;
  /** Logs a line. */
  readonly log: (line: string) => void;
}

/**
 * The relay's session layer: admits each moq session by its credential (a
 * client, or a peer relay), runs the sessions it dials to its peers, turns
 * every session's announcements into candidate routes, serves
 * subscriptions from the shared distributors, and keeps the per-session
 * metrics. Every session carries the relay's one hop id.
 */
export class RelaySessions {
  /** The relay's announcements (every selected route), shared by all sessions. */
  readonly announcer: Announcer = new Announcer();
  readonly #opts: RelaySessionsOptions;
  readonly #live = new Set<LiveSession>();
  readonly #tasks = new Set<Promise<unknown>>();
  readonly #announced = new Map<string, Announcement>();
  readonly #unwatch: () => void;
  readonly #turns: DeliveryTurns | undefined;
  #refusing = false;

  /** Starts mirroring selected routes into the relay's announcer. */
  constructor(options: RelaySessionsOptions) {
    this.#opts = options;
    this.#turns = options.deliveryTurnMs
      ? new DeliveryTurns({ budgetMs: options.deliveryTurnMs })
      : undefined;
    this.#unwatch = options.core.routes.onChange((c) => this.#mirror(c));
    options.metrics.registry.onCollect(() => this.#collect());
  }

  /** Number of sessions running now. */
  get active(): number {
    return this.#live.size;
  }

  // Peers hear of a route change as a new hop list for the same broadcast, never as an end.
  #mirror(c: RouteChange): void {
    if (c.kind === "ended") {
      this.#announced.get(c.path)?.withdraw();
      this.#announced.delete(c.path);
      return;
    }
    const held = this.#announced.get(c.path);
    if (held) held.update(c.route.hopIds);
    else this.#announced.set(c.path, this.announcer.announce(c.path, { hops: c.route.hopIds }));
  }

  #collect(): void {
    const m = this.#opts.metrics;
    m.sessionsActive.set({}, this.#live.size);
    const now = this.#opts.now();
    for (const l of this.#live) {
      countDatagrams(m, l);
      estimateBitrate(m, l, now);
    }
  }

  /** What every relay session's moq options and policy are made from. */
  #moqContext(): RelayMoqContext {
    const o = this.#opts;
    return {
      announcer: this.announcer,
      hopId: o.hopId,
      cacheSize: o.cacheSize,
      turns: this.#turns,
      core: o.core,
      metrics: o.metrics,
      datagramTracks: o.datagramTracks,
      log: o.log,
    };
  }

  /** Handles one transport session from the listener; never throws. */
  handle(session: Session): void {
    if (this.#refusing) {
      session.close(0, "relay stopping");
      return;
    }
    this.#track(
      this.#accept(session).catch((e) => {
        this.#opts.log(`relay: session ${session.remote} failed: ${errorText(e)}`);
      }),
    );
  }

  #track<T>(task: Promise<T>): Promise<T> {
    this.#tasks.add(task);
    task.finally(() => this.#tasks.delete(task));
    return task;
  }

  async #accept(session: Session): Promise<void> {
    const o = this.#opts;
    const context = this.#moqContext();
    let admission: Admission | undefined;
    let moq: MoqSession;
    try {
      moq = await accept(session, {
        ...relayMoqOptions(context),
        admit: async (s) => {
          try {
            admission = await admitSession(s.url, o.verifier);
            return relaySessionPolicy(context, admission);
          } catch (e) {
            o.log(`relay: session ${s.remote} refused: ${errorText(e)}`);
            return false;
          }
        },
      });
    } catch (e) {
      if (!(e instanceof MoqError)) throw e;
      return; // refused (closed with the unauthorized code) or never set up
    }
    const a = admission!;
    const name = a.grant?.sub ?? moq.url?.searchParams.get(PEER_PARAMETER) ?? moq.remote;
    if (a.peer) o.onPeerAdmitted?.(name);
    await this.#run(moq, a, { dialed: false, name });
  }

  /**
   * Runs a session this relay dialed to a peer. Resolves once the peer
   * admitted it (it answered the first RTT ping); rejects when the peer
   * refused it or turned out to be this relay ({@link SelfDialError}).
   */
  async dialed(session: Session, name: string): Promise<DialedPeer> {
    if (this.#refusing) {
      session.close(0, "relay stopping");
      throw new MoqError("closed", "The relay is stopping");
    }
    const context = this.#moqContext();
    const moq = await connect(session, {
      ...relayMoqOptions(context),
      ...relaySessionPolicy(context, DIALED_PEER),
    });
    const first = await firstRtt(moq, this.#opts.now);
    if (moq.isClosed || first === undefined) {
      const info = await moq.closed.catch(() => undefined);
      moq.close(0, "no answer");
      throw new MoqError(
        info?.code === MoqCode.Unauthorized ? "unauthorized" : "closed",
        `Peer ${session.remote} ${
          info?.code === MoqCode.Unauthorized ? "refused the session" : "did not answer"
        }`,
      );
    }
    if (moq.peerSetup?.origin === this.#opts.hopId) {
      moq.close(0, "this is us");
      throw new SelfDialError(`Peer ${session.remote} is this relay`);
    }
    const ended = this.#track(this.#run(moq, DIALED_PEER, { dialed: true, name, rtt: first }));
    return { moq, ended };
  }

  /** Runs an admitted session until it ends, then does its bookkeeping. */
  async #run(
    moq: MoqSession,
    admission: Admission,
    how: { dialed: boolean; name: string; rtt?: number },
  ): Promise<SessionCloseInfo> {
    const o = this.#opts;
    const peer = admission.peer;
    const labels = { transport: moq.transport.transport, class: peer ? "peer" : "client" };
    o.metrics.sessionsTotal.inc(labels);
    const live = this.#enter(moq, peer, how.rtt);
    const routes = new Map<string, RouteAnnouncement>();
    if (peer) this.#followGoaway(live, routes, how);
    const lease = startLease(moq, admission.grant, o.now, o.log);
    // A peer's routes are elected on arrival, so its RTT is measured before its announcements.
    const firstPing = peer && how.rtt === undefined
      ? firstRtt(moq, o.now).then((s) => s !== undefined && this.#sample(live, s))
      : Promise.resolve();
    const stopPing = this.#pingEvery(live);
    const watching = mayPublish(admission)
      ? firstPing.then(() => watchAnnouncements(live, routes, o.core.routes, o.log))
      : Promise.resolve();
    const info = await moq.closed;
    lease.stop();
    stopPing();
    for (const r of routes.values()) r.end();
    routes.clear();
    await watching;
    this.#leave(live, labels, info, lease.expired);
    return info;
  }

  // A session joins the live set, with its first RTT sample when the dial measured one.
  #enter(moq: MoqSession, peer: boolean, rtt: number | undefined): LiveSession {
    const live: LiveSession = {
      moq,
      remote: moq.remote,
      peer,
      draining: false,
      srtt: undefined,
      lastBytes: 0,
      lastAt: this.#opts.now(),
      counted: { datagrams: 0, fallbacks: 0, repeats: 0 },
    };
    if (rtt !== undefined) this.#sample(live, rtt);
    this.#live.add(live);
    return live;
  }

  // A peer's GOAWAY: its routes are left once unused, and the mesh may follow its redirect.
  #followGoaway(
    live: LiveSession,
    routes: Map<string, RouteAnnouncement>,
    how: { dialed: boolean; name: string },
  ): void {
    const o = this.#opts;
    const moq = live.moq;
    moq.goaway.then((uri) => {
      if (moq.isClosed) return;
      o.metrics.peerGoawayReceivedTotal.inc({ redirect: uri ? "true" : "false" });
      o.log(`relay: peer ${how.name} (${moq.remote}) sent GOAWAY${uri ? ` naming ${uri}` : ""}`);
      leaveWhenUnused(
        live,
        routes,
        o.core.routes,
        (why) => o.log(`relay: leaving peer ${how.name}: ${why}`),
      );
      o.onPeerGoaway?.({ moq, peer: how.name, dialed: how.dialed, uri });
    });
  }

  // The periodic RTT ping (at once when no sample was taken yet); returns what stops it.
  #pingEvery(live: LiveSession): () => void {
    const o = this.#opts;
    const every = o.rttIntervalMs ?? 10_000;
    if (every <= 0) return () => {};
    return startPing(
      live.moq,
      every,
      live.srtt === undefined ? 0 : every,
      o.now,
      (x) => this.#sample(live, x),
    );
  }

  // A session ended: it leaves the live set and its counters are closed.
  #leave(
    live: LiveSession,
    labels: SessionLabels,
    info: SessionCloseInfo,
    expired: boolean,
  ): void {
    const m = this.#opts.metrics;
    this.#live.delete(live);
    countDatagrams(m, live);
    const lastOfRemote = ![...this.#live].some((l) => l.remote === live.remote);
    countClosed(m, live, labels, info, expired, lastOfRemote);
  }

  #sample(live: LiveSession, sample: number): void {
    sampleRtt(this.#opts.metrics, live, sample);
  }

  /**
   * Starts draining: new sessions are refused and every running session is
   * sent GOAWAY naming `uri` ("" names none).
   */
  goaway(uri: string): void {
    this.#refusing = true;
    for (const l of this.#live) {
      l.moq.sendGoaway(uri).catch(() => {
        // The session is ending anyway.
      });
    }
  }

  /** Resolves once every session left, or after `timeoutMs`; true when all left. */
  async drained(timeoutMs: number): Promise<boolean> {
    const until = this.#opts.now() + timeoutMs;
    while (this.#live.size > 0 && this.#opts.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.#live.size === 0;
  }

  /** Closes every session and waits for their bookkeeping to finish. */
  async stop(): Promise<void> {
    this.#refusing = true;
    this.#unwatch();
    for (const l of this.#live) l.moq.close(0, "relay stopping");
    // Sessions are closed; their bookkeeping normally finishes at once, but never hold shutdown.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all([...this.#tasks]),
      new Promise((r) => (timer = setTimeout(r, this.#opts.stopTimeoutMs ?? 5000))),
    ]);
    clearTimeout(timer);
    for (const a of this.#announced.values()) a.withdraw();
    this.#announced.clear();
  }
}

// A credential that cannot publish never yields a route: that session is not asked for
// announcements (each open control stream holds a read buffer in the transport).
function mayPublish(admission: Admission): boolean {
  return admission.grant === undefined || admission.peer ||
    admission.grant.scopes.some((sc) => sc.actions.includes("publish"));
}
