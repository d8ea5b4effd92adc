/**
 * Sec-WebSocket-Protocol negotiation for QMux over WebSocket: which wire
 * format a negotiated value means, what a client offers and what a server
 * picks (in its own preference order, RFC 6455 §4.2.2).
 */

/** The QMux drafts with an application protocol, newest first. */
export const QMUX_DRAFTS = ["qmux-02", "qmux-01", "qmux-00"] as const;

/** A QMux draft. */
export type QMuxDraft = typeof QMUX_DRAFTS[number];

/** A wire format: a QMux draft, or the pre-QMux `webtransport` form (@moq/qmux 0.0.6). */
export type WireFormat = QMuxDraft | "webtransport";

/** What one negotiated subprotocol value means. */
export interface Negotiated {
  /** How frames are put on the wire. */
  readonly format: WireFormat;
  /** The application protocol (e.g. "moq-lite-05"); "" when the value named none. */
  readonly protocol: string;
}

const LEGACY = "webtransport";

/**
 * Reads a negotiated subprotocol: `qmux-02.moq-lite-05` is draft 02 carrying
 * moq-lite-05; a bare `qmux-0X` names no application protocol;
 * `webtransport.P` is @moq/qmux 0.0.6's legacy form; anything else
 * (including "") is the legacy format with no application protocol.
 */
export function parseSubprotocol(value: string): Negotiated {
  for (const draft of QMUX_DRAFTS) {
    if (value === draft) return { format: draft, protocol: "" };
    if (value.startsWith(`${draft}.`)) {
      return { format: draft, protocol: value.slice(draft.length + 1) };
    }
  }
  if (value.startsWith(`${LEGACY}.`)) {
    return { format: LEGACY, protocol: value.slice(LEGACY.length + 1) };
  }
  return { format: LEGACY, protocol: "" };
}

/**
 * The values a client offers for `protocols` (preferred first), each over
 * every draft in `drafts` (newest first): `qmux-02.moq-lite-05, qmux-01.moq-lite-05, …`.
 */
export function subprotocolOffer(
  protocols: readonly string[],
  drafts: readonly QMuxDraft[] = QMUX_DRAFTS,
): string[] {
  return protocols.flatMap((p) => drafts.map((d) => `${d}.${p}`));
}

/**
 * The value a server accepts from a client's offer (the raw
 * `Sec-WebSocket-Protocol` header or a list), in the server's preference
 * order: each of `protocols` over each of `drafts`, then, when `legacy` is
 * set, `webtransport.P` (offered only by @moq/qmux 0.0.6). Undefined when
 * nothing matches: the upgrade must then be refused (400), since accepting
 * without a subprotocol means the legacy format with no application protocol.
 */
export function selectSubprotocol(
  offered: string | readonly string[] | null | undefined,
  protocols: readonly string[],
  options: { readonly drafts?: readonly QMuxDraft[]; readonly legacy?: boolean } = {},
): string | undefined {
  const list = typeof offered === "string" ? offered.split(",") : offered ?? [];
  const offer = new Set(list.map((p) => p.trim()).filter((p) => p !== ""));
  const ours = subprotocolOffer(protocols, options.drafts ?? QMUX_DRAFTS);
  if (options.legacy !== false) ours.push(...protocols.map((p) => `${LEGACY}.${p}`));
  return ours.find((p) => offer.has(p));
}

/** True when messages carry records (several frames) and datagrams: qmux-01 and later. */
export function usesRecords(format: WireFormat): boolean {
  return format === "qmux-01" || format === "qmux-02";
}

/** True when the format has transport parameters and flow control (every QMux draft). */
export function hasFlowControl(format: WireFormat): boolean {
  return format !== LEGACY;
}
