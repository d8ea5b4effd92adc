import { SluiceError } from "../../errors/mod.ts";
import type { MoqPeer, MoqSession } from "../../moq/mod.ts";
import type { SessionCloseInfo } from "../../transport/mod.ts";

/** A GOAWAY received from a peer. */
export interface PeerGoaway {
  /** The session it came on. */
  readonly moq: MoqPeer;
  /** The peer's name (its credential's `sub` or URL `peer` parameter), or its address. */
  readonly peer: string;
  /** True when this relay dialed the session. */
  readonly dialed: boolean;
  /** Where the peer says to go, or "". */
  readonly uri: string;
}

/** A peer session this relay dialed, once the peer admitted it. */
export interface DialedPeer {
  /** The moq session. */
  readonly moq: MoqSession;
  /** Resolves when the session ended and its bookkeeping is done. */
  readonly ended: Promise<SessionCloseInfo>;
}

/** The dialed endpoint is this relay itself (a PEERS entry or redirect naming our own address). */
export class SelfDialError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["self_dial"] as const;
  /** Stable code. */
  declare readonly code: "self_dial";
  /** Makes the error. */
  constructor(message: string) {
    super("self_dial", message);
  }
}
