import { AuthError } from "../../../auth/mod.ts";
import { errorText } from "../../../error_text/mod.ts";
import type { Logger } from "../../../log/mod.ts";
import type { EntryFetch } from "../publisher.ts";
import type { CredentialCheck } from "./credential_check.ts";
import type { ToListener, WireTrack } from "./worker_messages.ts";

const NEVER = new AbortController().signal;

/**
 * The answer to the worker's "verify": the subscriber's grant, or the
 * refusal it is told. Checked here, on the main thread, with the funnel's
 * one verifier.
 */
export async function answerCredential(
  verifier: CredentialCheck,
  log: Logger,
  id: number,
  token: string | undefined,
): Promise<ToListener> {
  try {
    const { scopes, expiresAt, sub, keyPrefix } = await verifier.verify(token);
    return { type: "verified", id, grant: { scopes, expiresAt, sub, keyPrefix } };
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
    return { type: "entry", id, failed: errorText(error) };
  }
}
