import { prefixCovers } from "../path/mod.ts";
import { type Action, type Scope, scopeAllows } from "./scope.ts";

/** What a verified credential allows; ask it per request. */
export interface Grant {
  /** The credential's `sub`: the sender of what it posts or redacts. */
  readonly sub?: string;
  /** When the credential expires, in seconds since the epoch (before leeway). */
  readonly expiresAt: number;
  /** The scopes it grants (`path_auth` already turned into scopes). */
  readonly scopes: readonly Scope[];
  /** The signing key's `prefix`, which confines every scope; absent when the key has none. */
  readonly keyPrefix?: string;
  /**
   * Whether `action` is allowed on `broadcast` (and `track`). With `track`
   * undefined the question is about the broadcast as a whole (announcing it,
   * seeing it announced): true when some track of it is reachable.
   */
  allows(action: Action, broadcast: string, track?: string): boolean;
}

/** A grant built from checked scopes and the signing key's prefix. */
export class ScopedGrant implements Grant {
  /** The credential's subject. */
  readonly sub?: string;
  /** Expiry, seconds since the epoch. */
  readonly expiresAt: number;
  /** Scopes as checked. */
  readonly scopes: readonly Scope[];
  /** The key's confining prefix. */
  readonly keyPrefix?: string;

  /** Builds a grant; `keyPrefix` undefined or `""` confines nothing. */
  constructor(
    scopes: readonly Scope[],
    expiresAt: number,
    sub: string | undefined,
    keyPrefix: string | undefined,
  ) {
    this.scopes = scopes;
    this.expiresAt = expiresAt;
    if (sub !== undefined) this.sub = sub;
    if (keyPrefix !== undefined && keyPrefix !== "") this.keyPrefix = keyPrefix;
  }

  /** Whether `action` is allowed on `broadcast` (and `track`). */
  allows(action: Action, broadcast: string, track?: string): boolean {
    // A scope reaching outside the key's prefix grants nothing there.
    if (this.keyPrefix !== undefined && !prefixCovers(this.keyPrefix, broadcast)) return false;
    for (const scope of this.scopes) {
      if (scopeAllows(scope, action, broadcast, track)) return true;
    }
    return false;
  }
}

/** A grant that allows everything and names no sender: the answer when auth is off. */
export function unrestrictedGrant(): Grant {
  return {
    expiresAt: Number.POSITIVE_INFINITY,
    scopes: [{
      actions: ["post", "fetch", "redact", "publish", "subscribe", "peer"],
      broadcast: { prefix: "" },
    }],
    allows: () => true,
  };
}
