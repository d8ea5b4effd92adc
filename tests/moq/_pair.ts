/** Test helper: a native QUIC listener and a client session talking to it. */
import { generateDevCertificate } from "../../src/certs/mod.ts";
import { connectQuicSession, listenQuic } from "../../src/transport/quic.ts";
import type { Session } from "../../src/transport/session.ts";

let certPromise: ReturnType<typeof generateDevCertificate> | undefined;

/** One dev certificate per test process. */
export function testCert(): ReturnType<typeof generateDevCertificate> {
  return certPromise ??= generateDevCertificate();
}

/** A connected pair of QUIC sessions (client dials `path`). */
export async function quicPair(
  alpn: string,
  path = "/",
): Promise<{ client: Session; server: Session; stop: () => Promise<void> }> {
  const cert = await testCert();
  const listener = listenQuic({ cert: cert.certPem, key: cert.keyPem, alpn: [alpn] });
  const it = listener[Symbol.asyncIterator]();
  const serverP = it.next();
  const client = await connectQuicSession(
    new URL(`moqt://127.0.0.1:${listener.addr.port}${path}`),
    { serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }], alpn: [alpn] },
  );
  const server = (await serverP).value as Session;
  return {
    client,
    server,
    stop: async () => {
      client.close(0, "");
      server.close(0, "");
      await Promise.all([client.closed, server.closed]);
      listener.stop();
    },
  };
}
