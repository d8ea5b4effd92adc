import { AuthError, extractBearer, type Verifier } from "../auth/mod.ts";
import { HttpProblem } from "../http/mod.ts";
import { broadcastName, type TrackPath } from "../ledger/mod.ts";

/** The funnel actions a credential's scopes can grant. */
export type FunnelAction = "post" | "fetch" | "redact";

/**
 * Decides whether a request may act on a track and who its sender is.
 * Without a verifier (no SLUICE_AUTH_KEYS) every request is accepted with
 * no sender. Otherwise a missing or invalid credential is 401 with
 * `WWW-Authenticate: Bearer`, one that does not cover the track is 403.
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
    throw new HttpProblem(401, "A bearer credential is required: Authorization: Bearer <token>", {
      "www-authenticate": 'Bearer realm="sluice"',
    });
  }
  let grant;
  try {
    grant = await verifier.verify(token);
  } catch (error) {
    if (error instanceof AuthError) {
      throw new HttpProblem(401, `The credential was refused: ${error.message}`, {
        "www-authenticate": 'Bearer realm="sluice", error="invalid_token"',
      });
    }
    throw error;
  }
  if (!grant.allows(action, broadcastName(path), path.track)) {
    throw new HttpProblem(
      403,
      `The credential has no ${action} scope for broadcast "${
        broadcastName(path)
      }" track "${path.track}"`,
    );
  }
  return { sender: grant.sub };
}
