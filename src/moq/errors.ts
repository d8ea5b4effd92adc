/** Why a moq operation failed; `kind` is stable for callers to branch on. */
export type MoqErrorKind =
  | "not-found"
  | "unauthorized"
  | "refused"
  | "closed"
  | "protocol"
  | "cancelled"
  | "timeout";

/** A moq-layer failure (subscription refused, session closed, peer misbehaved). */
export class MoqError extends Error {
  /** Stable kind. */
  readonly kind: MoqErrorKind;
  /** Makes the error. */
  constructor(kind: MoqErrorKind, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "MoqError";
    this.kind = kind;
  }
}

/**
 * Application close / stream error codes sluice uses (the Rust reference's
 * numbering; the JavaScript libraries close with 15 on protocol violations).
 */
export const MoqCode = {
  /** Clean close. */
  None: 0,
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
export function refusalKind(code: number): MoqErrorKind | undefined {
  if (code === MoqCode.Unauthorized) return "unauthorized";
  if (code === MoqCode.NotFound) return "not-found";
  return undefined;
}
