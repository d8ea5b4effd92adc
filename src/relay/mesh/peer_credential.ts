import { MAX_LIFETIME_SECONDS, type Signer } from "../../auth/mod.ts";

/** A credential for one dialed session. */
export interface PeerCredential {
  /** The token, sent as the URL's `jwt`. */
  readonly token: string;
  /** When it expires, ms since the epoch. */
  readonly expiresAt: number;
}

/** The audience and issuer peer credentials carry (SLUICE_AUTH_AUDIENCE, SLUICE_AUTH_ISSUER). */
export interface PeerCredentialParties {
  /** `aud`, when the mesh's relays require one. */
  readonly audience?: string;
  /** `iss`, when the mesh's relays require one. */
  readonly issuer?: string;
}

/**
 * Signs this relay's peer credentials with RELAY_PEER_KEY: one `peer` scope
 * over everything the key may reach (its own prefix, when it has one), the
 * relay's name as `sub`, the configured audience and issuer, valid for the
 * longest lifetime a credential may have. The dialing relay renews each
 * session a minute before it expires.
 */
export function peerCredentials(
  signer: Signer,
  name: string,
  now: () => number = Date.now,
  parties: PeerCredentialParties = {},
): () => Promise<PeerCredential> {
  return async () => {
    const issuedAt = now();
    const token = await signer.sign({
      sub: name,
      scopes: [{ actions: ["peer"], broadcast: { prefix: signer.prefix ?? "" } }],
      ...(parties.audience !== undefined ? { aud: parties.audience } : {}),
      ...(parties.issuer !== undefined ? { iss: parties.issuer } : {}),
    }, { ttlSeconds: MAX_LIFETIME_SECONDS, now: () => issuedAt });
    // iat is whole seconds: the expiry is counted from the same second.
    return { token, expiresAt: (Math.floor(issuedAt / 1000) + MAX_LIFETIME_SECONDS) * 1000 };
  };
}
