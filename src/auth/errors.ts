import { ClientError, type ErrorAnswer, SluiceError } from "../errors/mod.ts";
import { bearerChallenge } from "./challenge.ts";

/** Why a credential was refused, for callers that branch on it or count it. */
export type AuthErrorCode =
  /** No credential was presented. */
  | "missing"
  /** The text is not a compact JWT, or its header is not acceptable (alg, crit, kid). */
  | "malformed"
  /** The header names a key that is not in the current key set. */
  | "unknown_key"
  /** The signature does not verify against the named key. */
  | "bad_signature"
  /** The claims are missing, mistyped, unknown or inconsistent. */
  | "bad_claims"
  /** The credential's `exp` has passed (after leeway). */
  | "expired"
  /** The credential's `nbf` or `iat` lies in the future (after leeway). */
  | "not_yet_valid"
  /** The credential is valid but does not cover what was asked. */
  | "forbidden";

/**
 * A refused credential: 401 when it is missing or invalid, 403 when it is
 * valid but does not reach the broadcast or track. `message` is safe to show
 * to the client; it never contains key material or the token.
 */
export class AuthError extends ClientError {
  /** The codes this class carries. */
  static readonly codes = [
    "missing",
    "malformed",
    "unknown_key",
    "bad_signature",
    "bad_claims",
    "expired",
    "not_yet_valid",
    "forbidden",
  ] as const satisfies readonly AuthErrorCode[];
  /** HTTP status the refusal maps to. */
  readonly status: 401 | 403;
  /** Stable reason for the refusal. */
  declare readonly code: AuthErrorCode;

  /** Builds a refusal; the status follows from the code. */
  constructor(code: AuthErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.status = code === "forbidden" ? 403 : 401;
  }

  /**
   * 403 as is; 401 with a `WWW-Authenticate` challenge, the detail saying the
   * credential was refused unless none came.
   */
  override answer(): ErrorAnswer {
    if (this.status === 403) return { status: 403, detail: this.message };
    return {
      status: 401,
      detail: this.code === "missing"
        ? this.message
        : `The credential was refused: ${this.message}`,
      headers: { "www-authenticate": bearerChallenge(this, { realm: "sluice" }) },
    };
  }
}

/**
 * Claims that are not acceptable: not an object, an unknown or mistyped
 * claim, a malformed scope or `path_auth`, an inconsistent lifetime. Thrown
 * by `parseClaims`, `parseScope` and `parsePathAuth`; the message names the
 * first thing wrong and never holds the token. The verifier refuses the
 * credential with `AuthError("bad_claims")` for this class alone, so a bug's
 * `TypeError` is not taken for the caller's bad credential.
 */
export class ClaimsError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["bad_claims"] as const;
  /** Stable code for callers. */
  declare readonly code: "bad_claims";

  /** Builds the error; `message` names what is wrong with the claims. */
  constructor(message: string) {
    super("bad_claims", message);
  }
}
