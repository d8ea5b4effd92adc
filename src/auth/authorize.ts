import { AuthError } from "./errors.ts";
import type { Grant } from "./grant.ts";
import type { Action } from "./scope.ts";

/**
 * Throws AuthError (403) unless `grant` allows `action` on `broadcast` (and
 * `track`); the message names what was refused, never the credential.
 */
export function requireAllowed(
  grant: Grant,
  action: Action,
  broadcast: string,
  track?: string,
): void {
  if (grant.allows(action, broadcast, track)) return;
  const target = track === undefined
    ? `broadcast "${broadcast}"`
    : `track "${track}" of broadcast "${broadcast}"`;
  throw new AuthError("forbidden", `The credential does not allow ${action} on ${target}`);
}
