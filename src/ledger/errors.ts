import { type ErrorAnswer, SluiceError } from "../errors/mod.ts";

/** Why a ledger operation failed, for callers that branch on it. */
export type LedgerErrorCode =
  /** The backend cannot be reached now (database down, bucket unreachable); retry later. */
  | "unavailable"
  /** Stored data could not be read back as a valid ledger. */
  | "corrupt"
  /** The request itself was wrong (unknown group, track absent). */
  | "not_found"
  /**
   * The track cannot be created beside one that already holds its storage
   * (a path differing only in case on a case-insensitive file system).
   */
  | "conflict"
  /** The operation cannot apply to what is stored (redacting a redaction). */
  | "invalid_request";

/** A storage failure translated once at the backend boundary. */
export class LedgerError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = [
    "unavailable",
    "corrupt",
    "not_found",
    "conflict",
    "invalid_request",
  ] as const satisfies readonly LedgerErrorCode[];
  /** What kind of failure this is. */
  declare readonly code: LedgerErrorCode;

  /** Wraps `cause` (kept for logs, never shown to clients). */
  constructor(code: LedgerErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }

  /**
   * A conflict (409) or a request that cannot apply (400) with the message;
   * an unreachable ledger as 503 with `Retry-After` and a fixed detail (the
   * message may name the backend); anything else is ours (500).
   */
  override answer(): ErrorAnswer | undefined {
    if (this.code === "conflict") return { status: 409, detail: this.message };
    if (this.code === "invalid_request") return { status: 400, detail: this.message };
    if (this.code !== "unavailable") return undefined;
    return {
      status: 503,
      detail: "The ledger is unavailable and did not confirm the request. Retry later; " +
        "a record POST with the same Idempotency-Key is stored once",
      headers: { "retry-after": "1" },
    };
  }
}

/**
 * A draft the ledger did not store: the track is sealed (`seal`, the reason
 * its sealer gave) or a commit gate refused it (`reason`, the gate's). Nothing
 * of that draft reached storage; other drafts of its batch are unaffected.
 */
export class CommitRefused extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["refused"] as const;
  /** Stable code for callers. */
  declare readonly code: "refused";
  /** The track's seal, when the seal refused the draft. */
  readonly seal: string | undefined;
  /** The gate's reason, when a gate refused the draft. */
  readonly reason: unknown;

  /** Builds the refusal from the seal or the gate's reason. */
  constructor(refusal: Refusal) {
    super(
      "refused",
      "seal" in refusal
        ? `The track is sealed: ${refusal.seal}`
        : "The track's commit gate refused the entry",
    );
    this.seal = "seal" in refusal ? refusal.seal : undefined;
    this.reason = "reason" in refusal ? refusal.reason : undefined;
  }
}

/** Why a draft was not stored: the track's seal, or its commit gate's reason. */
export type Refusal = { readonly seal: string } | { readonly reason: unknown };
