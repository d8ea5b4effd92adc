// What retention and expiry ask of a track's storage, whether the track is open here or not.
import type { LedgerEntry } from "./entry.ts";
import type { StoredTrack } from "./retention_options.ts";
import { TrackLedger } from "./track_ledger.ts";

/**
 * A track's newest entry: a single writer's open ledger keeps it; storage is
 * asked otherwise (a shared ledger's other writers move it on; a track not
 * open here has no cache but its backend's).
 */
export async function newestOf(track: StoredTrack): Promise<LedgerEntry | undefined> {
  return track instanceof TrackLedger && !track.shared
    ? track.newest
    : await track.backend.latest();
}

/**
 * Removes a track's entries below `before`, never the newest entry (the backend keeps it too; an
 * open ledger also bounds the cut by the newest it knows); resolves with the first sequence kept.
 */
export function trimStored(track: StoredTrack, before: number): Promise<number> {
  return track instanceof TrackLedger ? track.trim(before) : track.backend.trim(before);
}
