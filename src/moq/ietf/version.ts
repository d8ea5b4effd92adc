/**
 * The draft-ietf-moq-transport versions sluice speaks beside moq-lite, and
 * how each is negotiated. Draft 14 has no ALPN of its own beyond `moq-00`:
 * the version is chosen inside CLIENT_SETUP / SERVER_SETUP. From draft 15
 * the ALPN (`moqt-16`) names the draft and the setup carries no version.
 */

/** The IETF drafts sluice speaks. */
export type IetfDraft = 14 | 16 | 20;

/** The wire version number of each draft (0xff000000 + draft). */
export const IETF_VERSION: Readonly<Record<IetfDraft, number>> = {
  14: 0xff00000e,
  16: 0xff000010,
  20: 0xff000014,
};

/** ALPN / WT-Protocol token per draft. */
export const IETF_ALPN: Readonly<Record<IetfDraft, string>> = {
  14: "moq-00",
  16: "moqt-16",
  20: "moqt-20",
};

/** Every IETF protocol token sluice offers, preferred first (after moq-lite's). */
export const IETF_PROTOCOLS: readonly string[] = [IETF_ALPN[20], IETF_ALPN[16], IETF_ALPN[14]];

/**
 * The IETF protocol tokens usable as a WT-Protocol or QMux subprotocol:
 * from draft 15 the token names the draft; draft 14's `moq-00` has no such role.
 */
export const IETF_WEB_PROTOCOLS: readonly string[] = [IETF_ALPN[20], IETF_ALPN[16]];

/** The draft a negotiated protocol names, or undefined when it is not an IETF one. */
export function ietfDraftOf(protocol: string): IetfDraft | undefined {
  if (protocol === IETF_ALPN[14]) return 14;
  if (protocol === IETF_ALPN[16]) return 16;
  if (protocol === IETF_ALPN[20]) return 20;
  return undefined;
}

/**
 * Session close codes of draft-ietf-moq-transport (section "Session
 * Termination"); a peer's malformed bytes close with `ProtocolViolation`.
 */
export const IetfCode = {
  /** Clean close. */
  None: 0x0,
  /** Our own failure. */
  Internal: 0x1,
  /** Not allowed by credentials. */
  Unauthorized: 0x2,
  /** The peer broke the protocol (malformed or unexpected message). */
  ProtocolViolation: 0x3,
  /** A request id out of order, of the wrong parity or above the granted maximum. */
  InvalidRequestId: 0x4,
  /** Two subscriptions under one track alias. */
  DuplicateTrackAlias: 0x5,
  /** Setup never arrived in time. */
  ControlMessageTimeout: 0x11,
  /** No common version. */
  VersionNegotiationFailed: 0x15,
} as const;
