// QMux test helpers: a WebSocket server that accepts QMux sessions, and connected pairs.
import {
  acceptQMux,
  type AcceptQMuxOptions,
  connectQMux,
  type ConnectQMuxOptions,
  isWebSocketUpgrade,
  type QMuxDraft,
  type QMuxSession,
  selectSubprotocol,
} from "../../src/transport/mod.ts";
import type { Session } from "../../src/transport/mod.ts";
import { concatBytes } from "../../src/wire/mod.ts";
import { testCertificate } from "./certs.ts";

/** A running QMux WebSocket server. */
export interface QMuxServer {
  /** ws:// or wss:// base URL. */
  readonly url: URL;
  /** The bound port. */
  readonly port: number;
  /** Stops the HTTP server (sessions stay until closed). */
  stop(): Promise<void>;
}

/** Serves QMux on 127.0.0.1 (TLS with the test certificate when `tls` is set). */
export async function serveQMux(
  onSession: (session: QMuxSession, req: Request) => void,
  options: {
    readonly protocols?: readonly string[];
    readonly drafts?: readonly QMuxDraft[];
    readonly tls?: boolean;
    readonly accept?: Partial<AcceptQMuxOptions>;
  } = {},
): Promise<QMuxServer> {
  const protocols = options.protocols ?? ["moq-lite-05", "moq-lite-04"];
  const cert = options.tls ? await testCertificate() : undefined;
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
  }, (req, info) => {
    const offered = req.headers.get("sec-websocket-protocol");
    const subprotocol = selectSubprotocol(offered, protocols, {
      ...(options.drafts ? { drafts: options.drafts } : {}),
    });
    if (!isWebSocketUpgrade(req) || subprotocol === undefined) {
      return new Response("no acceptable subprotocol", { status: 400 });
    }
    const { response, session } = acceptQMux(req, subprotocol, {
      remote: `${info.remoteAddr.hostname}:${info.remoteAddr.port}`,
      ...options.accept,
    });
    onSession(session, req);
    return response;
  });
  const port = server.addr.port;
  const host = cert ? "localhost" : "127.0.0.1";
  return {
    url: new URL(`${cert ? "wss" : "ws"}://${host}:${port}/`),
    port,
    stop: () => server.shutdown(),
  };
}

/** A connected client/server pair of QMux sessions over ws://. */
export async function qmuxPair(
  options: Partial<ConnectQMuxOptions> & { readonly serverDrafts?: readonly QMuxDraft[] } = {},
  path = "/",
): Promise<{ client: Session; server: QMuxSession; stop: () => Promise<void> }> {
  let resolveServer!: (s: QMuxSession) => void;
  const serverP = new Promise<QMuxSession>((r) => (resolveServer = r));
  const srv = await serveQMux((s) => resolveServer(s), {
    ...(options.serverDrafts ? { drafts: options.serverDrafts } : {}),
  });
  const client = await connectQMux(new URL(path, srv.url), {
    protocols: ["moq-lite-05", "moq-lite-04"],
    ...options,
  });
  const server = await serverP;
  return {
    client,
    server,
    stop: async () => {
      client.close(0, "");
      server.close(0, "");
      await Promise.all([client.closed, server.closed]);
      await srv.stop();
    },
  };
}

/**
 * A WebSocket client on a bare TCP connection that completes the handshake
 * and then never reads (unless told to): it sends masked binary messages
 * and lets the server's writes pile up in the kernel's buffers.
 */
export async function rawWebSocket(port: number, protocol: string): Promise<{
  send(payload: Uint8Array): Promise<void>;
  close(): void;
}> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  await conn.write(new TextEncoder().encode(
    `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n` +
      `Sec-WebSocket-Protocol: ${protocol}\r\n\r\n`,
  ));
  const head = new Uint8Array(4096);
  const n = await conn.read(head);
  const status = new TextDecoder().decode(head.subarray(0, n ?? 0)).split("\r\n")[0];
  if (!status?.includes(" 101 ")) throw new Error(`Handshake refused: ${status}`);
  return {
    async send(payload) {
      const len = payload.length;
      const header = len < 126
        ? [0x82, 0x80 | len]
        : len < 65536
        ? [0x82, 0x80 | 126, len >> 8, len & 0xff]
        : [
          0x82,
          0x80 | 127,
          0,
          0,
          0,
          0,
          len >>> 24,
          (len >> 16) & 0xff,
          (len >> 8) & 0xff,
          len & 0xff,
        ];
      // A zero mask: the payload goes out as it is.
      let off = 0;
      const frame = concatBytes([new Uint8Array(header), new Uint8Array(4), payload]);
      while (off < frame.length) off += await conn.write(frame.subarray(off));
    },
    close() {
      try {
        conn.close();
      } catch {
        // already closed by the server
      }
    },
  };
}

/**
 * Until disposed, browser-style clients in this process see no WebTransport
 * (so @moq/net falls back to WebSocket) and no native WebSocketStream (so
 * @moq/qmux uses its ponyfill over the global WebSocket, as in browsers
 * without WebSocketStream), and the global WebSocket trusts `caPem`: Deno's
 * WebSocket takes its TLS roots from an HTTP client, which @moq/qmux cannot
 * pass. The protocol code that runs is theirs, unchanged.
 */
export function webSocketOnly(caPem: string): Disposable {
  const g = globalThis as Record<string, unknown>;
  const saved = { WebTransport: g.WebTransport, WebSocketStream: g.WebSocketStream, WebSocket };
  const client = Deno.createHttpClient({ caCerts: [caPem] });
  class TrustingWebSocket extends saved.WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, { protocols: protocols ?? [], client } as WebSocketOptions);
    }
  }
  delete g.WebTransport;
  delete g.WebSocketStream;
  g.WebSocket = TrustingWebSocket;
  return {
    [Symbol.dispose]: () => {
      g.WebTransport = saved.WebTransport;
      g.WebSocketStream = saved.WebSocketStream;
      g.WebSocket = saved.WebSocket;
      client.close();
    },
  };
}

/**
 * Sends a WebSocket upgrade request over TLS to localhost:`port` (trusting
 * `caPem`) and returns the response's status: what a client learns before
 * any upgrade happens.
 */
export async function upgradeStatus(
  port: number,
  caPem: string,
  pathAndQuery: string,
  headers: Record<string, string>,
): Promise<number> {
  const conn = await Deno.connectTls({
    hostname: "localhost",
    port,
    caCerts: [caPem],
    alpnProtocols: ["http/1.1"],
  });
  try {
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
    const lines = [
      `GET ${pathAndQuery} HTTP/1.1`,
      `Host: localhost:${port}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${key}`,
      "Sec-WebSocket-Version: 13",
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    await conn.write(new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
    const buf = new Uint8Array(1024);
    const n = await conn.read(buf);
    const status = /^HTTP\/1\.1 (\d{3})/.exec(new TextDecoder().decode(buf.subarray(0, n ?? 0)));
    if (!status) throw new Error("No HTTP status line in the answer");
    return Number(status[1]);
  } finally {
    conn.close();
  }
}
