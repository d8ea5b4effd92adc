import { AuthError } from "../../../auth/mod.ts";
import { errorText } from "../../../error_text/mod.ts";
import type { Logger } from "../../../log/mod.ts";
import { MoqError } from "../../../moq/mod.ts";
import type { EntryFetch, TrackLookup } from "../publisher.ts";
import type { CredentialCheck } from "./credential_check.ts";
import type { ToListener, WireTrack } from "./worker_messages.ts";

const NEVER = new AbortController().signal;

/**
 * The answer to the worker's "verify": the subscriber's grant, or the
 * refusal it is told. Checked here, on the main thread, with the funnel's
 * one verifier. The grant's lifetime goes as milliseconds left by `now`, the
 * clock the verifier measures expiry by, so the worker's lease ends with it.
 */
export async function answerCredential(
  verifier: CredentialCheck,
  log: Logger,
  id: number,
  token: string | undefined,
  now: () => number,
): Promise<ToListener> {
  try {
    const { scopes, expiresAt, sub, keyPrefix } = await verifier.verify(token);
    const msLeft = expiresAt * 1000 - now();
    return { type: "verified", id, grant: { scopes, msLeft, sub, keyPrefix } };
  } catch (error) {
    if (!(error instanceof AuthError)) log.error("Checking a subscriber credential failed", error);
    const refusal = error instanceof AuthError
      ? { code: error.code, message: error.message }
      : { code: "malformed" as const, message: "The credential could not be checked" };
    return { type: "verified", id, refusal };
  }
}

/**
 * The answer to the worker's "fetch": a FETCH its recent groups cannot
 * answer, read here where the ledger is.
 */
export async function answerFetch(
  fetchEntry: EntryFetch | undefined,
  id: number,
  track: WireTrack,
  seq: number,
): Promise<ToListener> {
  try {
    const entry = await fetchEntry?.(
      { broadcast: track.broadcast, track: track.track },
      seq,
      NEVER,
    );
    return entry ? { type: "entry", id, entry } : { type: "entry", id };
  } catch (error) {
    if (error instanceof MoqError && error.code === "gone") {
      return { type: "entry", id, gone: true };
    }
    return { type: "entry", id, failed: errorText(error) };
  }
}

/**
 * The answer to the worker's "lookup": whether a track the worker closed
 * (or never had) exists, read here where the ledger is, charged to the
 * asking session's budget. A failed read is answered as no such track; the
 * subscriber may ask again.
 */
export async function answerLookup(
  lookupTrack: TrackLookup | undefined,
  log: Logger,
  id: number,
  track: WireTrack,
  asker?: string,
): Promise<ToListener> {
  try {
    const found = await lookupTrack?.({ broadcast: track.broadcast, track: track.track }, asker);
    if (!found) return { type: "found", id, exists: false };
    if (found === "too_many") return { type: "found", id, exists: false, tooMany: true };
    return found.newest
      ? { type: "found", id, exists: true, newest: found.newest }
      : { type: "found", id, exists: true };
  } catch (error) {
    log.warn(`Looking up a track for a subscriber failed: ${errorText(error)}`);
    return { type: "found", id, exists: false };
  }
}
