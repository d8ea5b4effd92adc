import { errorText } from "../errors/mod.ts";
import type { Verifier } from "../auth/mod.ts";
import {
  accept,
  type Announcement,
  Announcer,
  MoqCode,
  MoqError,
  type MoqSession,
  type ServeDecision,
} from "../moq/mod.ts";
import type { Session } from "../transport/mod.ts";
import { type Admission, admitSession, allowed } from "./admission.ts";
import type { UpstreamTrack } from "./distributor.ts";
import { type RelayCore, SubscribeError } from "./relay_core.ts";
import type { RelayMetrics } from "./relay_metrics.ts";
import type { Announcement as RouteAnnouncement } from "./route_table.ts";
import { pingRtt, RTT_PING_PATH, smoothRtt } from "./session_rtt.ts";

/** Groups an upstream subscription may hold before the distributor's loop takes them. */
const UPSTREAM_QUEUE_LIMIT = 1024;

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
  /** Clock in ms. */
  readonly now: () => number;
  /** Interval of the session RTT ping in ms (0 disables; default 10000). */
  readonly rttIntervalMs?: number;
  /** Longest wait for session bookkeeping at stop, ms (default 5000). */
  readonly stopTimeoutMs?: number;
  /** Logs a line. */
  readonly log: (line: string) => void;
}

interface Live {
  moq: MoqSession;
  remote: string;
  srtt: number | undefined;
  lastBytes: number;
  lastAt: number;
}

/**
 * The relay's session layer: admits each moq session by its credential,
 * turns the peer's announcements into routes, serves its subscriptions from
 * the shared distributors, and keeps the per-session metrics.
 */
export class RelaySessions {
  /** The relay's announcements (every active route), shared by all sessions. */
  readonly announcer: Announcer = new Announcer();
  readonly #opts: RelaySessionsOptions;
  readonly #live = new Set<Live>();
  readonly #tasks = new Set<Promise<void>>();
  readonly #routeAnnouncements = new Map<string, Announcement>();
  readonly #unwatch: () => void;
  #stopped = false;

  /** Starts mirroring routes into the relay's announcer. */
  constructor(options: RelaySessionsOptions) {
    this.#opts = options;
    this.#unwatch = options.core.routes.watch("", (e) => {
      if (e.active) {
        const hops = options.core.routes.get(e.path)?.source.hopIds ?? [];
        this.#routeAnnouncements.get(e.path)?.withdraw();
        this.#routeAnnouncements.set(e.path, this.announcer.announce(e.path, { hops }));
      } else {
        this.#routeAnnouncements.get(e.path)?.withdraw();
        this.#routeAnnouncements.delete(e.path);
      }
    });
    const m = options.metrics;
    m.registry.onCollect(() => this.#collect());
  }

  /** Number of admitted sessions now. */
  get active(): number {
    return this.#live.size;
  }

  #collect(): void {
    const m = this.#opts.metrics;
    m.sessionsActive.set({}, this.#live.size);
    const now = this.#opts.now();
    for (const l of this.#live) {
      // Delivery rate since the previous scrape: a lower bound of the available bandwidth.
      const bytes = l.moq.stats.bytesSent;
      const dt = (now - l.lastAt) / 1000;
      if (dt > 0) {
        m.sessionEstimatedBitrateBps.set(
          { remote: l.remote },
          Math.round(((bytes - l.lastBytes) * 8) / dt),
        );
        l.lastBytes = bytes;
        l.lastAt = now;
      }
    }
  }

  /** Handles one transport session (from the listener); never throws. */
  handle(session: Session): void {
    if (this.#stopped) {
      session.close(0, "relay stopping");
      return;
    }
    const task = this.#serve(session).catch((e) => {
      this.#opts.log(
        `relay: session ${session.remote} failed: ${errorText(e)}`,
      );
    });
    this.#tasks.add(task);
    task.finally(() => this.#tasks.delete(task));
  }

  async #serve(session: Session): Promise<void> {
    const o = this.#opts;
    const m = o.metrics;
    let admission: Admission | undefined;
    const serve = async (
      kind: "subscribe" | "track" | "fetch",
      path: string,
      track: string,
    ): Promise<ServeDecision> => {
      if (path === RTT_PING_PATH) return "not-found";
      if (!admission || !allowed(admission, "subscribe", path, track)) {
        if (kind !== "fetch") m.subscribeErrorsTotal.inc({ code: "unauthorized" });
        return "unauthorized";
      }
      try {
        return await o.core.source(path, track, kind);
      } catch (e) {
        if (e instanceof SubscribeError) {
          return e.code === "unauthorized" ? "unauthorized" : "not-found";
        }
        throw e;
      }
    };
    let moq: MoqSession;
    try {
      moq = await accept(session, {
        announcer: this.announcer,
        maxGroupQueue: o.cacheSize,
        announceFilter: (path) => admission !== undefined && allowed(admission, "subscribe", path),
        acceptAnnounce: (path) => {
          if (admission !== undefined && allowed(admission, "publish", path)) return true;
          // An announcement the credential does not cover never becomes a route.
          m.routeRejectionsTotal.inc({ reason: "unauthorized" });
          return false;
        },
        serve: (r) => serve(r.kind, r.path, r.track),
        admit: async (s) => {
          try {
            admission = await admitSession(s.url, o.verifier);
            return true;
          } catch (e) {
            o.log(`relay: session ${s.remote} refused: ${errorText(e)}`);
            return false;
          }
        },
        log: o.log,
      });
    } catch (e) {
      if (!(e instanceof MoqError)) throw e;
      return; // refused (closed with the unauthorized code) or never set up
    }
    const transport = session.transport;
    const labels = { transport, class: "client" };
    m.sessionsTotal.inc(labels);
    const live: Live = { moq, remote: moq.remote, srtt: undefined, lastBytes: 0, lastAt: o.now() };
    this.#live.add(live);
    const routes = new Map<string, RouteAnnouncement>();
    const stopPing = this.#startPing(live);
    // The session lives no longer than its credential (spec: "the relay session
    // ends when it does"); the publisher is expected to redial with a fresh one.
    let expired = false;
    const leaseMs = admission?.grant ? admission.grant.expiresAt * 1000 - o.now() : Infinity;
    const lease = Number.isFinite(leaseMs)
      ? setTimeout(() => {
        expired = true;
        o.log(`relay: session ${moq.remote} ended: its credential expired`);
        moq.close(MoqCode.Unauthorized, "credential expired");
      }, Math.max(0, leaseMs))
      : undefined;
    // A credential that cannot publish never yields a route: skip asking that peer for
    // announcements (each open control stream holds a read buffer in the transport).
    const mayPublish = admission?.grant === undefined ||
      admission.grant.scopes.some((sc) => sc.actions.includes("publish"));
    const watching = mayPublish ? this.#watchAnnouncements(moq, routes) : Promise.resolve();
    const info = await moq.closed;
    clearTimeout(lease);
    stopPing();
    for (const r of routes.values()) r.end();
    routes.clear();
    await watching;
    this.#live.delete(live);
    // A fixed set of reasons: a peer must not mint label values with its close codes.
    const reason = expired
      ? "expired"
      : info.dropped
      ? "dropped"
      : info.code === 0
      ? "closed"
      : "error";
    m.sessionsClosedTotal.inc({ ...labels, reason });
    m.sessionBytesTotal.inc({ ...labels, direction: "sent" }, moq.stats.bytesSent);
    m.sessionBytesTotal.inc({ ...labels, direction: "received" }, moq.stats.bytesReceived);
    if (![...this.#live].some((l) => l.remote === live.remote)) {
      m.sessionRttMs.remove({ remote: live.remote });
      m.sessionRttSeconds.remove({ remote: live.remote });
      m.sessionEstimatedBitrateBps.remove({ remote: live.remote });
    }
  }

  /** Turns the peer's announcements into routes for as long as the session lives. */
  async #watchAnnouncements(
    moq: MoqSession,
    routes: Map<string, RouteAnnouncement>,
  ): Promise<void> {
    const core = this.#opts.core;
    try {
      for await (const e of moq.announced("")) {
        if (e.active) {
          routes.get(e.path)?.end();
          routes.set(
            e.path,
            core.routes.announce(e.path, {
              remote: moq.remote,
              // Hop count from the origin: a publisher connected here is one hop away
              // (lite-05 lists its origin id, lite-04 lists nothing).
              hops: Math.max(1, e.hops.length),
              hopIds: e.hops,
              subscribe: (track) => this.#upstream(moq, e.path, track),
              fetch: (track, group, options) => moq.fetch(e.path, track, group, options),
              rttMs: () => [...this.#live].find((l) => l.moq === moq)?.srtt,
            }),
          );
        } else {
          routes.get(e.path)?.end();
          routes.delete(e.path);
        }
      }
    } catch (e) {
      if (!moq.isClosed) this.#opts.log(`relay: announcements of ${moq.remote} failed: ${e}`);
    }
  }

  async #upstream(moq: MoqSession, path: string, track: string): Promise<UpstreamTrack> {
    // The distributor takes every group at once, so this queue only ever holds one
    // burst (groups retransmitted on a lossy link land together); never drop from it.
    const sub = moq.subscribe(path, track, { queueLimit: UPSTREAM_QUEUE_LIMIT });
    try {
      await sub.ready;
    } catch (e) {
      sub.close();
      throw e;
    }
    return {
      groups: sub,
      close: () => sub.close(),
      inflight: () => sub.receiving,
      info: sub.info,
    };
  }

  #startPing(live: Live): () => void {
    const every = this.#opts.rttIntervalMs ?? 10_000;
    if (every <= 0) return () => {};
    const m = this.#opts.metrics;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const tick = async () => {
      // A ping that fails (the session is ending) just yields no sample.
      const sample = await pingRtt(live.moq, this.#opts.now).catch(() => undefined);
      if (stopped) return;
      if (sample !== undefined) {
        live.srtt = smoothRtt(live.srtt, sample);
        m.sessionRttMs.set({ remote: live.remote }, Math.round(live.srtt * 1000) / 1000);
        m.sessionRttSeconds.observe({ remote: live.remote }, sample / 1000);
      }
      timer = setTimeout(tick, every);
    };
    timer = setTimeout(tick, 0);
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }

  /** Closes every session and waits for their bookkeeping to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unwatch();
    for (const l of this.#live) l.moq.close(0, "relay stopping");
    // Sessions are closed; their bookkeeping normally finishes at once, but never hold shutdown.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all([...this.#tasks]),
      new Promise((r) => (timer = setTimeout(r, this.#opts.stopTimeoutMs ?? 5000))),
    ]);
    clearTimeout(timer);
    for (const a of this.#routeAnnouncements.values()) a.withdraw();
    this.#routeAnnouncements.clear();
  }
}
