import { SluiceError } from "../errors/mod.ts";

/** Why a moq operation failed; `code` is stable for callers to branch on. */
export type MoqErrorCode = (typeof MoqError.codes)[number];

/** A moq-layer failure (subscription refused, session closed, peer misbehaved). */
export class MoqError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = [
    "not_found",
    "gone",
    "unauthorized",
    "refused",
    "closed",
    "protocol_violation",
    "cancelled",
    "timeout",
  ] as const;
  /** Stable code. */
  declare readonly code: MoqErrorCode;
  /** Makes the error. */
  constructor(code: MoqErrorCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
  }
}

/**
 * Application close / stream error codes sluice uses (the Rust reference's
 * numbering; the JavaScript libraries close with 15 on protocol violations).
 */
export const MoqCode = {
  /** Clean close. */
  None: 0,
  /**
   * The group is older than what the publisher keeps (the Rust reference's
   * `Old`): a FETCH of a record retention removed. gomoqt's group-stream
   * equivalent is ExpiredGroup 0x3.
   */
  Old: 2,
  /** Transport-level failure. */
  Transport: 4,
  /** Undecodable bytes. */
  Decode: 5,
  /** Not allowed by credentials. */
  Unauthorized: 6,
  /** Unknown stream type. */
  UnexpectedStream: 10,
  /** A limit was exceeded. */
  BoundsExceeded: 11,
  /** Duplicate id or announcement. */
  Duplicate: 12,
  /** Unknown broadcast or track. */
  NotFound: 13,
  /** Peer broke the protocol. */
  ProtocolViolation: 15,
  /** Going away. */
  GoingAway: 25,
} as const;

/** The kind a refusal's reset code names, if it names one (lite refusals carry these codes). */
export function refusalKind(code: number): MoqErrorCode | undefined {
  if (code === MoqCode.Unauthorized) return "unauthorized";
  if (code === MoqCode.NotFound) return "not_found";
  if (code === MoqCode.Old) return "gone";
  // A server over one of its limits (too many lookups): refused, not absent.
  if (code === MoqCode.BoundsExceeded) return "refused";
  return undefined;
}

/**
 * The close reason for a session its admission check refused by throwing: a
 * SluiceError's message, which is written for the caller (as an HTTP 401 body
 * is), cut to 200 characters; anything else is just "unauthorized".
 */
export function refusalReason(err: unknown): string {
  if (err === false || !(err instanceof SluiceError)) return "unauthorized";
  return err.message.slice(0, 200);
}
