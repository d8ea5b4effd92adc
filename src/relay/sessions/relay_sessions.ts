import { errorText } from "../../error_text/mod.ts";
import {
  accept,
  acceptIetf,
  type Announcement,
  Announcer,
  connect,
  DeliveryTurns,
  ietfDraftOf,
  MoqCode,
  MoqError,
  type MoqPeer,
  MoqSession,
  startLease,
} from "../../moq/mod.ts";
import type { Session, SessionCloseInfo } from "../../transport/mod.ts";
import { Deadlines, sleep, type Timers } from "../../timers/mod.ts";
import {
  type Admission,
  admitSession,
  DIALED_PEER,
  mayPublish,
  PEER_PARAMETER,
  publisherIdentity,
} from "./session_grants.ts";
import type { Announcement as RouteAnnouncement, RouteChange } from "../routing/mod.ts";
import { followGoaway, type LiveSession, watchAnnouncements } from "./session_routes.ts";
import { type CheckedSession, CredentialRecheck } from "./credential_recheck.ts";
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
import { type DialedPeer, SelfDialError } from "./peer_session.ts";
import type { RelaySessionsOptions } from "./relay_sessions_options.ts";

const RESOLVED: Promise<unknown> = Promise.resolve();

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
  readonly #recheck: CredentialRecheck | undefined;
  // Every session's credential lease shares one timer rather than holding a timer of its own.
  readonly #leases: Timers;
  // Live sessions per remote address: an entry lives exactly as long as a session from there,
  // so the live sessions bound it.
  readonly #perRemote = new Map<string, number>();
  #context: RelayMoqContext | undefined;
  #refusing = false;

  /** Starts mirroring selected routes into the relay's announcer. */
  constructor(options: RelaySessionsOptions) {
    this.#opts = options;
    this.#turns = options.deliveryTurnMs
      ? new DeliveryTurns({ budgetMs: options.deliveryTurnMs })
      : undefined;
    this.#unwatch = options.core.routes.onChange((c) => this.#mirror(c));
    this.#recheck = options.verifier
      ? new CredentialRecheck({ verifier: options.verifier, log: options.log })
      : undefined;
    options.metrics.registry.onCollect(() => this.#collect());
    const leases = new Deadlines({
      ...(options.timers ? { timers: options.timers } : {}),
      now: options.now,
    });
    this.#leases = leases.timers;
  }

  /**
   * Holds delivery turns back while the listener's UDP socket is filling (`backlog`: the share
   * of its receive buffer in use; see `DeliveryTurns.watchBacklog`). Known once it is bound.
   */
  watchSocketBacklog(backlog: () => number): void {
    this.#turns?.watchBacklog(backlog);
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

  /**
   * What every relay session's moq options and policy are made from: one object, which each
   * session's policy callbacks hold for its whole life, shared rather than one per session.
   */
  #moqContext(): RelayMoqContext {
    const o = this.#opts;
    return this.#context ??= {
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

  async #accept(session: Session): Promise<SessionCloseInfo | undefined> {
    const o = this.#opts;
    const context = this.#moqContext();
    let admission: Admission | undefined;
    let moq: MoqPeer;
    // An IETF MoQ Transport client (by its negotiated protocol) gets the IETF session;
    // both serve the same surface, so routing below never knows the dialect.
    const ietf = ietfDraftOf(session.protocol) !== undefined;
    const start = ietf ? acceptIetf : accept;
    try {
      moq = await start(session, {
        ...relayMoqOptions(context),
        admit: async (s) => {
          try {
            admission = await admitSession(s.url, o.verifier);
            // The mesh speaks moq-lite (hop lists, RTT pings): a peer credential over IETF is refused.
            if (ietf && admission.peer) {
              o.log(`relay: session ${s.remote} refused: a peer relay must speak moq-lite`);
              return false;
            }
            return relaySessionPolicy(context, admission);
          } catch (e) {
            o.log(`relay: session ${s.remote} refused: ${errorText(e)}`);
            throw e; // the close reason says why (an AuthError's message)
          }
        },
      });
    } catch (e) {
      if (!(e instanceof MoqError)) throw e;
      return undefined; // refused (closed with the unauthorized code) or never set up
    }
    const a = admission!;
    const name = a.grant?.sub ??
      (moq.url && new URLSearchParams(moq.url.search).get(PEER_PARAMETER)) ?? moq.remote;
    // Returned, not awaited: the session's whole life then holds #run's frame only, not this one.
    return this.#run(moq, a, { dialed: false, name });
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
    const first = await firstRtt(moq, this.#opts.now, this.#opts.timers);
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
    moq: MoqPeer,
    admission: Admission,
    how: { dialed: boolean; name: string; rtt?: number },
  ): Promise<SessionCloseInfo> {
    const o = this.#opts;
    const peer = admission.peer;
    const labels = { transport: moq.transport.transport, class: peer ? "peer" : "client" };
    o.metrics.sessionsTotal.inc(labels);
    const live = this.#enter(moq, peer, how.rtt);
    const publishes = mayPublish(admission);
    // The session's candidate routes, by path: only a peer or a publisher has any.
    const routes = peer || publishes ? new Map<string, RouteAnnouncement>() : undefined;
    if (peer) followGoaway(live, routes!, how, this.#opts);
    const lease = startLease(
      moq,
      admission.grant,
      o.now,
      (line) => o.log(`relay: ${line}`),
      this.#leases,
    );
    // A peer's routes are elected on arrival, so its RTT is measured before its announcements.
    const firstPing = peer && how.rtt === undefined
      ? firstRtt(moq, o.now, o.timers).then((s) => s !== undefined && this.#sample(live, s))
      : RESOLVED;
    const stopPing = this.#pingEvery(live);
    const checked = this.#watchCredential(moq, admission);
    // The publisher's identity owns the paths it announces first (see RouteOwners).
    const owner = publisherIdentity(admission, moq.remote, how.dialed);
    const watching = publishes
      ? firstPing.then(() => watchAnnouncements(live, routes!, o.core.routes, o.log, owner))
      : RESOLVED;
    const info = await moq.closed;
    lease.stop();
    if (checked) this.#recheck?.forget(checked);
    stopPing();
    if (routes) {
      for (const r of routes.values()) r.end();
      routes.clear();
    }
    await watching;
    this.#leave(live, labels, info, lease.expired || (checked?.revoked ?? false));
    return info;
  }

  // A session joins the live set, with its first RTT sample when the dial measured one.
  #enter(moq: MoqPeer, peer: boolean, rtt: number | undefined): LiveSession {
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
    this.#perRemote.set(live.remote, (this.#perRemote.get(live.remote) ?? 0) + 1);
    return live;
  }

  // A session admitted with a credential is checked again whenever the key set changes.
  #watchCredential(moq: MoqPeer, admission: Admission): CheckedSession | undefined {
    if (admission.token === undefined || this.#recheck === undefined) return undefined;
    const checked: CheckedSession = { moq, token: admission.token, revoked: false };
    this.#recheck.watch(checked);
    return checked;
  }

  // The periodic RTT ping of a peer relay, on its own timer (at once when no sample was taken
  // yet), since route election needs its RTT; returns what stops it. Only a sluice relay knows
  // the ping's reserved track: a client (@moq/net, a browser) would answer each ping with a
  // refusal and a log line of its own, so client sessions are not pinged (docs/relay.md,
  // "session_rtt_ms"). A client's route is never elected on RTT: it has fewer hops than any
  // route through a peer.
  #pingEvery(live: LiveSession): () => void {
    const o = this.#opts;
    const every = o.rttIntervalMs ?? 10_000;
    // The mesh speaks moq-lite; a peer over IETF is refused at admission.
    if (every <= 0 || !live.peer || !(live.moq instanceof MoqSession)) return () => {};
    return startPing(
      live.moq,
      every,
      live.srtt === undefined ? 0 : every,
      o.now,
      (x) => this.#sample(live, x),
      o.timers,
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
    // Counted per address rather than found by scanning every live session: a burst of sessions
    // ending at once would otherwise cost the square of their number.
    const left = (this.#perRemote.get(live.remote) ?? 1) - 1;
    if (left > 0) this.#perRemote.set(live.remote, left);
    else this.#perRemote.delete(live.remote);
    const lastOfRemote = left === 0;
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
      await sleep(50, undefined, this.#opts.timers);
    }
    return this.#live.size === 0;
  }

  /** Closes every session and waits for their bookkeeping to finish. */
  async stop(): Promise<void> {
    this.#refusing = true;
    this.#unwatch();
    this.#recheck?.stop();
    for (const l of this.#live) l.moq.close(0, "relay stopping");
    // Sessions are closed; their bookkeeping normally finishes at once, but never hold shutdown.
    const late = new AbortController();
    await Promise.race([
      Promise.all([...this.#tasks]),
      sleep(this.#opts.stopTimeoutMs ?? 5000, late.signal, this.#opts.timers),
    ]);
    late.abort();
    for (const a of this.#announced.values()) a.withdraw();
    this.#announced.clear();
  }
}
