/** Why a ledger operation failed, for callers that branch on it. */
export type LedgerErrorKind =
  /** The backend cannot be reached now (database down, bucket unreachable); retry later. */
  | "unavailable"
  /** Stored data could not be read back as a valid ledger. */
  | "corrupt"
  /** The request itself was wrong (unknown group, track absent). */
  | "not_found";

/** A storage failure translated once at the backend boundary. */
export class LedgerError extends Error {
  /** What kind of failure this is. */
  readonly kind: LedgerErrorKind;

  /** Wraps `cause` (kept for logs, never shown to clients). */
  constructor(kind: LedgerErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "LedgerError";
    this.kind = kind;
  }
}

/**
 * A draft the ledger did not store: the track is sealed (`seal`, the reason
 * its sealer gave) or a commit gate refused it (`reason`, the gate's). Nothing
 * of that draft reached storage; other drafts of its batch are unaffected.
 */
export class CommitRefused extends Error {
  /** Stable code for callers. */
  readonly code = "refused";
  /** The track's seal, when the seal refused the draft. */
  readonly seal: string | undefined;
  /** The gate's reason, when a gate refused the draft. */
  readonly reason: unknown;

  /** Builds the refusal from the seal or the gate's reason. */
  constructor(refusal: Refusal) {
    super(
      "seal" in refusal
        ? `The track is sealed: ${refusal.seal}`
        : "The track's commit gate refused the entry",
    );
    this.name = "CommitRefused";
    this.seal = "seal" in refusal ? refusal.seal : undefined;
    this.reason = "reason" in refusal ? refusal.reason : undefined;
  }
}

/** Why a draft was not stored: the track's seal, or its commit gate's reason. */
export type Refusal = { readonly seal: string } | { readonly reason: unknown };
