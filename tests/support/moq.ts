// MoQ test helpers shared by the moq, WebTransport, relay and funnel tests:
// dialing with our client and with @moq/net, announcement waits, and a session
// whose incoming groups can be held back.
import * as Net from "@moq/net";
import { connect, type MoqSession, type MoqSessionOptions, VERSIONS } from "../../src/moq/mod.ts";
import type { Session } from "../../src/transport/mod.ts";
import { connectQMux, type QMuxDraft } from "../../src/transport/mod.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import { asWebTransport, connectWebTransport } from "../../src/transport/mod.ts";
import { testCertificate } from "./certs.ts";
import { webSocketOnly } from "./qmux.ts";

/**
 * Dials a MoQ endpoint on localhost (or `host`, as in a URL: `127.0.0.1`,
 * `[::1]`) with our client: native QUIC (`alpn`), WebTransport, or QMux over
 * WebSocket (`webSocket`: the drafts to offer).
 */
export async function dialOurs(
  port: number,
  options: {
    host?: string;
    jwt?: string;
    alpn?: string;
    webTransport?: boolean;
    webSocket?: readonly QMuxDraft[];
    origin?: string;
    maxUni?: number;
    wrap?: (session: Session) => Session;
    moq?: MoqSessionOptions;
  } = {},
): Promise<MoqSession> {
  const c = await testCertificate();
  const query = options.jwt === undefined ? "" : `?jwt=${options.jwt}`;
  const at = `${options.host ?? "localhost"}:${port}/${query}`;
  const session = options.webSocket
    ? await connectQMux(new URL(`wss://${at}`), {
      protocols: options.alpn ? [options.alpn] : VERSIONS,
      drafts: options.webSocket,
      caCerts: [c.certPem],
      ...(options.origin ? { origin: options.origin } : {}),
    })
    : options.webTransport
    ? await connectWebTransport(new URL(`https://${at}`), {
      protocols: VERSIONS,
      serverCertificateHashes: [c.sha256],
      ...(options.origin ? { origin: options.origin } : {}),
    })
    : await connectQuicSession(new URL(`moqt://${at}`), {
      alpn: VERSIONS,
      serverCertificateHashes: [{ algorithm: "sha-256", value: c.sha256 }],
      ...(options.alpn ? { alpn: [options.alpn] } : {}),
      ...(options.maxUni ? { maxConcurrentUnidirectionalStreams: options.maxUni } : {}),
    });
  return await connect(options.wrap ? options.wrap(session) : session, options.moq ?? {});
}

/**
 * Dials with @moq/net: over native QUIC (`version`, lite-05 by default),
 * (`webTransport`) over our WebTransport client, which carries the URL's
 * `jwt` in the CONNECT request, or (`webSocket`) with its own connect and
 * WebTransport absent, so it falls back to QMux over WebSocket.
 */
export async function dialNet(
  port: number,
  options: { version?: string; jwt?: string; webTransport?: boolean; webSocket?: boolean } = {},
): Promise<Awaited<ReturnType<typeof Net.Connection.connect>>> {
  const c = await testCertificate();
  const query = options.jwt === undefined ? "" : `?jwt=${options.jwt}`;
  const url = new URL(`https://localhost:${port}/${query}`);
  if (options.webSocket) {
    using _ = webSocketOnly(c.certPem);
    return await Net.Connection.connect(url, { websocket: { delay: 0 } });
  }
  if (options.webTransport) {
    const wt = await connectWebTransport(url, {
      protocols: VERSIONS,
      serverCertificateHashes: [c.sha256],
    });
    return await Net.Connection.connect(url, {
      transport: asWebTransport(wt) as unknown as WebTransport,
    });
  }
  const quic = await Deno.connectQuic({
    hostname: "127.0.0.1",
    port,
    alpnProtocols: [options.version ?? "moq-lite-05"],
    caCerts: [c.certPem],
    serverName: "localhost",
    maxConcurrentUnidirectionalStreams: 1000,
  });
  return await Net.Connection.connect(url, { transport: quic as unknown as WebTransport });
}

/** Waits until `moq` sees `path` announced (active), watching `prefix` (all by default). */
export async function seeAnnounced(moq: MoqSession, path: string, prefix = ""): Promise<void> {
  const ac = new AbortController();
  for await (const e of moq.announced(prefix, { signal: ac.signal })) {
    if (e.path === path && e.active) break;
  }
  ac.abort();
}

/** The first `count` distinct broadcast paths `moq` sees announced (active). */
export async function announcedPaths(moq: MoqSession, count: number): Promise<Set<string>> {
  const seen = new Set<string>();
  const ac = new AbortController();
  for await (const e of moq.announced("", { signal: ac.signal })) {
    if (e.active) seen.add(e.path);
    if (seen.size === count) break;
  }
  ac.abort();
  return seen;
}

/**
 * Wraps a session so that its incoming unidirectional streams (MoQ groups)
 * are not accepted while held: a subscriber that stops reading.
 */
export function stallable(session: Session): { session: Session; hold(): void; release(): void } {
  let gate: Promise<void> | undefined;
  let open = (): void => {};
  const wrapped: Session = {
    get transport() {
      return session.transport;
    },
    get protocol() {
      return session.protocol;
    },
    get url() {
      return session.url;
    },
    get remote() {
      return session.remote;
    },
    get closed() {
      return session.closed;
    },
    openBidi: (o) => session.openBidi(o),
    openUni: (o) => session.openUni(o),
    acceptBidi: () => session.acceptBidi(),
    acceptUni: async () => {
      while (gate) await gate;
      return await session.acceptUni();
    },
    translateError: (err) => session.translateError(err),
    close: (code, reason) => session.close(code, reason),
  };
  return {
    session: wrapped,
    hold: () => {
      gate = new Promise((resolve) => (open = resolve));
    },
    release: () => {
      gate = undefined;
      open();
    },
  };
}
