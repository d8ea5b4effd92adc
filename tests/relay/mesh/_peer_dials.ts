// The peer dials an in-process relay starts, seen through its own peer transport the moment
// each begins: "this relay never dials X" is then checked once the relay has decided, with no
// wait for a session that might yet arrive.
import { type PeerTransport, peerTransport } from "../../../src/relay/mod.ts";
import { testCertificate } from "../../support/certs.ts";

/** A peer transport (the shipped one, trusting the test certificate) that notes each dial. */
export interface PeerDials {
  /** Pass as the relay's `peerTransport`. */
  readonly transport: PeerTransport;
  /** The `host:port` of every dial started, in order. */
  readonly started: string[];
}

/** Notes every peer dial of the relay it is given to. */
export async function peerDials(): Promise<PeerDials> {
  const inner = peerTransport([(await testCertificate()).certPem]);
  const started: string[] = [];
  return {
    started,
    transport: (url, serverName, signal) => {
      started.push(url.host);
      return inner(url, serverName, signal);
    },
  };
}
