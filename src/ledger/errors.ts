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
