import type { MoqPeer } from "../../moq/mod.ts";
import { redactUrl } from "../../error_text/mod.ts";
import type { RelaySessionsOptions } from "./relay_sessions_options.ts";
import { SessionSource } from "../routing/mod.ts";
import type { Announcement as RouteAnnouncement, RouteTable } from "../routing/mod.ts";

/** One running session as the relay's session layer keeps it. */
export interface LiveSession {
  /** The moq session. */
  readonly moq: MoqPeer;
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
 * `routes` holds the session's candidates by path; `owner` is the
 * publisher's identity (undefined for a peer relay).
 */
export async function watchAnnouncements(
  live: LiveSession,
  routes: Map<string, RouteAnnouncement>,
  table: RouteTable,
  log: (line: string) => void,
  owner?: string,
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
        // A value: routing reads the session record and talks to its moq session itself.
        table.announce(e.path, new SessionSource(live, e.path, { hops, hopIds: e.hops, owner })),
      );
    }
  } catch (e) {
    if (!moq.isClosed) log(`relay: announcements of ${moq.remote} failed: ${e}`);
  }
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

/** A peer's GOAWAY: its routes are left once unused, and the mesh may follow its redirect. */
export function followGoaway(
  live: LiveSession,
  routes: Map<string, RouteAnnouncement>,
  how: { dialed: boolean; name: string },
  o: Pick<RelaySessionsOptions, "core" | "metrics" | "log" | "onPeerGoaway">,
): void {
  const moq = live.moq;
  moq.goaway.then((uri) => {
    if (moq.isClosed) return;
    o.metrics.peerGoawayReceivedTotal.inc({ redirect: uri ? "true" : "false" });
    o.log(
      `relay: peer ${how.name} (${moq.remote}) sent GOAWAY${
        uri ? ` naming ${redactUrl(uri)}` : ""
      }`,
    );
    leaveWhenUnused(
      live,
      routes,
      o.core.routes,
      (why) => o.log(`relay: leaving peer ${how.name}: ${why}`),
    );
    o.onPeerGoaway?.({ moq, peer: how.name, dialed: how.dialed, uri });
  });
}
