import type { RouteSource } from "./route_table.ts";

/**
 * What happened to a track, for the relay to act on (`TrackDistributor.events`):
 * its current upstream ended by itself (the publisher finished the track, or
 * its session went away), or it has had no subscriber for its idle time.
 */
export type TrackEvent =
  | { readonly kind: "upstream-ended"; readonly source: RouteSource }
  | { readonly kind: "idle" };

/** Where a switch of upstream starts (`TrackDistributor.retarget`). */
export interface SwitchStart {
  /** The lowest group not received (the one after the latest when nothing is missing). */
  readonly start: number | undefined;
  /** Groups were received already: gaps the switch opens are repaired at once. */
  readonly switched: boolean;
}
