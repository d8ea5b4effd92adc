/** Test helper: a native QUIC listener and a client session talking to it. */
import {
  accept,
  connect,
  type MoqSession,
  type MoqSessionOptions,
  TrackProducer,
} from "../../src/moq/mod.ts";
import { connectQuicSession, listenQuic } from "../../src/transport/mod.ts";
import type { Session } from "../../src/transport/mod.ts";
import { testCertificate } from "./certs.ts";

/** A connected pair of QUIC sessions (client dials `path`). */
export async function quicPair(
  alpn: string,
  path = "/",
): Promise<{ client: Session; server: Session; stop: () => Promise<void> }> {
  const cert = await testCertificate();
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

/** What our session serves in the interop tests: `producer` as "sluice/feed" track "records". */
export function feedOptions(producer: TrackProducer): MoqSessionOptions {
  return {
    serve: (r) => r.path === "sluice/feed" && r.track === "records" ? producer : "not_found",
    // A queue of 64 (shipped 16): the interop tests write their groups in a burst and compare
    // every one; skipping a subscriber forward is tested in tests/moq.
    maxGroupQueue: 64,
  };
}

/**
 * Our moq server serving the feed on a native QUIC listener, and a raw QUIC
 * connection dialled to it for a foreign client library to run on.
 */
export async function ourFeedServer(version: string, extra: MoqSessionOptions = {}): Promise<{
  producer: TrackProducer;
  ours: Promise<MoqSession>;
  quic: Deno.QuicConn;
  url: URL;
  stop: () => void;
}> {
  const cert = await testCertificate();
  const listener = listenQuic({ cert: cert.certPem, key: cert.keyPem, alpn: [version] });
  const producer = new TrackProducer({ cache: 8 });
  const ours = (async () => {
    for await (const s of listener) return await accept(s, { ...feedOptions(producer), ...extra });
    throw new Error("listener ended");
  })();
  const quic = await Deno.connectQuic({
    hostname: "127.0.0.1",
    port: listener.addr.port,
    alpnProtocols: [version],
    caCerts: [cert.certPem],
    serverName: "localhost",
    maxConcurrentUnidirectionalStreams: 1000,
  });
  const url = new URL(`https://localhost:${listener.addr.port}/`);
  return { producer, ours, quic, url, stop: () => listener.stop() };
}

/**
 * A raw QUIC listener for a foreign server library (`acceptTheirs`), and our
 * moq client dialled to it (at `pathAndQuery`) serving the feed.
 */
export async function theirFeedServer<T>(
  version: string,
  acceptTheirs: (conn: Deno.QuicConn, url: URL) => Promise<T>,
  pathAndQuery = "/",
): Promise<{ producer: TrackProducer; ours: MoqSession; theirs: T; stop: () => void }> {
  const cert = await testCertificate();
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  const listener = endpoint.listen({
    cert: cert.certPem,
    key: cert.keyPem,
    alpnProtocols: [version],
    maxConcurrentUnidirectionalStreams: 1000,
  });
  const theirsP = (async () => {
    const conn = await (await listener.incoming()).accept();
    return await acceptTheirs(conn, new URL(`https://localhost:${endpoint.addr.port}/`));
  })();
  const session = await connectQuicSession(
    new URL(`moqt://127.0.0.1:${endpoint.addr.port}${pathAndQuery}`),
    { serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }], alpn: [version] },
  );
  const producer = new TrackProducer({ cache: 8 });
  const ours = await connect(session, feedOptions(producer));
  return { producer, ours, theirs: await theirsP, stop: () => endpoint.close() };
}
