import type { MoqSession } from "../../moq/mod.ts";
import type { UpstreamTrack } from "../routing/mod.ts";
import type { Announcement as RouteAnnouncement, RouteTable } from "../routing/mod.ts";

/** Groups an upstream subscription may hold before the distributor's loop takes them. */
const UPSTREAM_QUEUE_LIMIT = 1024;

/** One running session as the relay's session layer keeps it. */
export interface LiveSession {
  /** The moq session. */
  readonly moq: MoqSession;
  /** Its remote address, the `remote` label of its metrics. */
  readonly remote: string;
  /** Class "peer": another relay. */
  readonly peer: boolean;
  /** The peer sent GOAWAY: its routes lose every election and it is left once unused. */
  draining: boolean;
  /** Smoothed RTT, ms, once measured. */
  srtt: number | undefined;
  /** Bytes sent at the previous scrape (delivery rate). */
  lastBytes: number;
  /** When that was, ms. */
  lastAt: number;
  /** Datagram groups, fallbacks and tail repeats already added to the relay's counters. */
  counted: { datagrams: number; fallbacks: number; repeats: number };
}

/**
 * Turns a session's announcements into candidate routes for as long as it
 * lives: an active announcement is offered to `table` (a second one for the
 * same path is a restart with a new hop list), an ended one withdrawn.
 * `routes` holds the session's candidates by path.
 */
export async function watchAnnouncements(
  live: LiveSession,
  routes: Map<string, RouteAnnouncement>,
  table: RouteTable,
  log: (line: string) => void,
): Promise<void> {
  const { moq, peer } = live;
  try {
    for await (const e of moq.announced("")) {
      const held = routes.get(e.path);
      if (!e.active) {
        held?.end();
        routes.delete(e.path);
        continue;
      }
      // The full hop list holds the publisher's own id, then one id per relay: a
      // publisher connected here is 0 hops away, a peer's broadcast at least 1.
      const hops = Math.max(peer ? 1 : 0, e.hops.length - 1);
      if (held) {
        held.update(hops, e.hops); // a restart: the same broadcast on a new path upstream
        continue;
      }
      routes.set(
        e.path,
        table.announce(e.path, {
          remote: moq.remote,
          hops,
          hopIds: e.hops,
          subscribe: (track, options) => upstream(moq, e.path, track, options?.start),
          ...(moq.version === "moq-lite-05"
            ? { trackInfo: (track: string) => moq.trackInfo(e.path, track) }
            : {}),
          fetch: (track, group, options) => moq.fetch(e.path, track, group, options),
          rttMs: () => live.srtt,
          alive: () => !moq.isClosed && !live.draining,
        }),
      );
    }
  } catch (e) {
    if (!moq.isClosed) log(`relay: announcements of ${moq.remote} failed: ${e}`);
  }
}

/** The relay's upstream subscription to one track of the session's broadcast. */
async function upstream(
  moq: MoqSession,
  path: string,
  track: string,
  start: number | undefined,
): Promise<UpstreamTrack> {
  // The distributor takes every group at once, so this queue only ever holds one
  // burst (groups retransmitted on a lossy link land together); never drop from it.
  // Each group is handed over at its first frame and followed frame by frame (cut-through).
  const sub = moq.subscribe(path, track, {
    queueLimit: UPSTREAM_QUEUE_LIMIT,
    partial: true,
    ...(start === undefined ? {} : { start }),
  });
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
    skipped: () => sub.skipped,
    answered: sub.answered,
    info: sub.info,
  };
}

/**
 * A peer sent GOAWAY. Its routes step down to retained alternates now, lose
 * every later election, and the session is left as soon as no selected
 * route runs through it (a redirect the peer named usually takes over the
 * rest), or when the peer closes it at the end of its drain.
 */
export function leaveWhenUnused(
  live: LiveSession,
  routes: Map<string, RouteAnnouncement>,
  table: RouteTable,
  log: (why: string) => void,
): void {
  const moq = live.moq;
  live.draining = true;
  for (const r of routes.values()) r.stepDown();
  const leaveIfUnused = (): void => {
    if (moq.isClosed || [...routes.values()].some((r) => r.active)) return;
    log("no route runs through it any more");
    moq.close(0, "goaway");
  };
  const unwatch = table.onChange(leaveIfUnused);
  moq.closed.then(unwatch);
  leaveIfUnused();
}
