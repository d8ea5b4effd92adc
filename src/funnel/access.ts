import { AuthError, extractBearer, requireAllowed, type Verifier } from "../auth/mod.ts";
import { broadcastName, type TrackPath } from "../path/mod.ts";

/** The funnel actions a credential's scopes can grant. */
export type FunnelAction = "post" | "fetch" | "redact";

/**
 * Decides whether a request may act on a track and who its sender is.
 * Without a verifier (no SLUICE_AUTH_KEYS) every request is accepted with
 * no sender. Otherwise throws `AuthError`: 401 for a missing or invalid
 * credential, 403 for one that does not cover the track.
 */
export async function authorize(
  verifier: Verifier | undefined,
  authorization: string | null,
  action: FunnelAction,
  path: TrackPath,
): Promise<{ readonly sender: string | undefined }> {
  if (!verifier) return { sender: undefined };
  const token = extractBearer(authorization);
  if (token === undefined) {
    throw new AuthError(
      "missing",
      "A bearer credential is required: Authorization: Bearer <token>",
    );
  }
  const grant = await verifier.verify(token);
  requireAllowed(grant, action, broadcastName(path), path.track);
  return { sender: grant.sub };
}
