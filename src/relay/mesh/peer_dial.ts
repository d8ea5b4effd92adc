import { systemTimers, type Timers } from "../../timers/mod.ts";
import type { Session } from "../../transport/mod.ts";
import { PEER_PARAMETER, type RelaySessions } from "../sessions/mod.ts";
import type { PeerCredential } from "./peer_credential.ts";
import type { PeerSession } from "./peer_link.ts";
import type { PeerTransport } from "./peer_transport.ts";

/** What {@link dialPeer} needs. */
export interface PeerDialOptions {
  /** RELAY_NAME: sent as the `peer` URL parameter. */
  readonly name: string;
  /** Signs a fresh peer credential per dialed session; none with auth off. */
  readonly credential?: () => Promise<PeerCredential>;
  /** The session layer that runs the dialed session. */
  readonly sessions: RelaySessions;
  /** Opens the transport session. */
  readonly transport: PeerTransport;
  /** Longest wait for the whole dial, transport and moq handshake together, ms (default 10000). */
  readonly dialTimeoutMs?: number;
  /** Timers (default the global ones). */
  readonly timers?: Timers;
}

/**
 * Dials one peer session: signs a credential into the URL, opens the
 * transport and runs the moq handshake, all under one deadline. `label` is
 * the link's address, `serverName` the name the certificate must carry.
 */
export async function dialPeer(
  target: URL,
  serverName: string,
  label: string,
  o: PeerDialOptions,
): Promise<PeerSession> {
  const url = new URL(target.href);
  url.searchParams.set(PEER_PARAMETER, o.name);
  const ms = o.dialTimeoutMs ?? 10_000;
  const timers = o.timers ?? systemTimers;
  // One deadline for the whole dial: when it passes, the transport's connect is abandoned
  // (the signal) or the session it opened is closed, which ends the moq handshake too.
  const abandon = new AbortController();
  let session: Session | undefined;
  const timer = timers.setTimeout(() => {
    abandon.abort(new Error(`no answer within ${ms} ms`));
    session?.close(0, "dial timed out");
  }, ms);
  try {
    let expiresAt: number | undefined;
    if (o.credential) {
      const credential = await o.credential();
      url.searchParams.set("jwt", credential.token);
      expiresAt = credential.expiresAt;
    }
    abandon.signal.throwIfAborted();
    session = await o.transport(url, serverName, abandon.signal);
    if (abandon.signal.aborted) session.close(0, "dial timed out");
    abandon.signal.throwIfAborted();
    const dialed = await o.sessions.dialed(session, label);
    return { ...dialed, ...(expiresAt === undefined ? {} : { expiresAt }) };
  } finally {
    timers.clearTimeout(timer);
  }
}
