import type { Timers } from "../../timers/mod.ts";
import type { TrackDistributor } from "./distributor.ts";
import type { RouteSource, RouteTable } from "./route_table.ts";

/**
 * The broadcast has no route through `from` any more: keep the track (and
 * its subscribers) for `ms` in case the broadcast comes back another way — a
 * publisher following GOAWAY to another relay, the route table promoting
 * after a session died — and `end` it if it does not.
 */
export function lingerOrphan(
  routes: RouteTable,
  d: TrackDistributor,
  from: RouteSource,
  ms: number,
  timers: Timers,
  end: () => void,
): void {
  const stop = routes.onChange((c) => {
    if (c.path !== d.path || c.kind === "ended") return;
    timers.clearTimeout(timer);
    stop();
  });
  const timer = timers.setTimeout(() => {
    stop();
    if (!d.ended && d.source === from) end();
  }, ms);
}
