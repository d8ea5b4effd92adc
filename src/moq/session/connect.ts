/** Starting a moq-lite session on a transport session, as the client or as the server. */
import type { Session } from "../../transport/mod.ts";
import { MoqCode, MoqError, refusalReason } from "../errors.ts";
import { PROTOCOL_CODE } from "./core.ts";
import { MoqSession } from "./moq_session.ts";
import type { MoqPeer } from "../peer.ts";
import type { AdmitDecision, MoqAcceptOptions, MoqSessionOptions } from "./types.ts";

/**
 * Starts a moq-lite session as the client (the side that dialed). The
 * version comes from the transport's negotiated protocol.
 *
 * @example
 * ```ts
 * const url = new URL("moqt://127.0.0.1:4443/?jwt=t");
 * const moq = await connect(await connectQuicSession(url, { alpn: VERSIONS, caCerts }));
 * ```
 */
export function connect(session: Session, options: MoqSessionOptions = {}): Promise<MoqSession> {
  let moq: MoqSession;
  try {
    moq = new MoqSession(session, "client", options);
  } catch (err) {
    session.close(MoqCode.ProtocolViolation, "unsupported protocol");
    return Promise.reject(err);
  }
  moq._startUni();
  moq._startBidi();
  return Promise.resolve(moq);
}

/**
 * Starts a moq-lite session as the server. On native QUIC lite-05 it waits
 * for the client's SETUP so that `url` (path and query, e.g. `jwt`) is known,
 * then asks `admit` before serving anything.
 */
export async function accept(
  session: Session,
  options: MoqAcceptOptions = {},
): Promise<MoqSession> {
  let moq: MoqSession;
  try {
    moq = new MoqSession(session, "server", options);
  } catch (err) {
    session.close(MoqCode.ProtocolViolation, "unsupported protocol");
    throw err;
  }
  moq._startUni();
  if (moq.version === "moq-lite-05" && session.url === undefined) {
    const got = await moq._awaitSetup(options.setupTimeout ?? 10_000);
    if (moq.isClosed) throw new MoqError("closed", "Session closed during setup");
    if (!got) {
      moq.close(PROTOCOL_CODE, "no SETUP");
      throw new MoqError("timeout", "Client sent no SETUP");
    }
  }
  if (options.admit) {
    const decision = await askAdmission(options.admit, moq);
    if (decision === false || decision instanceof Error) {
      // The peer is told why (a credential refused says which check failed), as HTTP tells it.
      moq.close(MoqCode.Unauthorized, refusalReason(decision));
      throw new MoqError("unauthorized", "Session not admitted");
    }
    if (decision !== true) moq._admitWith(decision);
  }
  moq._startBidi();
  return moq;
}

/**
 * Asks `admit` about `moq` (either dialect): its decision, or the error it
 * threw, which refuses the session as false does and says why (see
 * `refusalReason`).
 */
export async function askAdmission(
  admit: NonNullable<MoqAcceptOptions["admit"]>,
  moq: MoqPeer,
): Promise<AdmitDecision | Error> {
  try {
    return await admit(moq);
  } catch (err) {
    return err instanceof Error ? err : false;
  }
}
