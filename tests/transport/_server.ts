import type { DevCertificate } from "../../src/certs/mod.ts";
import { concatBytes, DropOldestQueue } from "../../src/wire/mod.ts";
import { listen, type Listener, type ListenOptions } from "../../src/transport/listener.ts";
import type { Session } from "../../src/transport/session.ts";
import type { WebTransportRequest } from "../../src/transport/webtransport/mod.ts";
import { VERSIONS } from "../../src/moq/mod.ts";
import { testCertificate } from "../support/certs.ts";

/** A listener on 127.0.0.1:0 whose sessions and admission requests are queued for the test. */
export interface TestServer {
  readonly server: Listener;
  readonly cert: DevCertificate;
  readonly port: number;
  readonly sessions: DropOldestQueue<Session>;
  readonly requests: WebTransportRequest[];
  url(pathAndQuery: string): URL;
  stop(): Promise<void>;
}

/** Starts the combined listener for a test. */
export async function startServer(
  options: Partial<Omit<ListenOptions, "certPem" | "keyPem" | "onSession">> = {},
): Promise<TestServer> {
  const cert = await testCertificate();
  const sessions = new DropOldestQueue<Session>();
  const opened: Session[] = [];
  const requests: WebTransportRequest[] = [];
  const admit = options.admitWebTransport;
  const server = await listen({
    protocols: VERSIONS,
    ...options,
    certPem: cert.certPem,
    keyPem: cert.keyPem,
    admitWebTransport: (req) => {
      requests.push(req);
      if (admit) return admit(req);
      const protocol = ["moq-lite-05", "moq-lite-04"].find((p) => req.protocols.includes(p)) ??
        (req.protocols.length === 0 ? "moq-lite-04" : undefined);
      return protocol ? { status: 200, protocol } : { status: 400 };
    },
    onSession: (s) => {
      opened.push(s);
      sessions.push(s);
    },
  });
  const port = server.addr.port;
  return {
    server,
    cert,
    port,
    sessions,
    requests,
    url: (p) => new URL(`https://localhost:${port}${p}`),
    async stop() {
      for (const s of opened) s.close(0, "test done");
      sessions.close();
      await server.stop();
    },
  };
}

/** Reads a whole stream as text. */
export async function readText(readable: ReadableStream<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  const reader = readable.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  return new TextDecoder().decode(concatBytes(chunks));
}

/** Writes text and FINs. */
export async function writeText(writable: WritableStream<Uint8Array>, text: string): Promise<void> {
  const w = writable.getWriter();
  await w.write(new TextEncoder().encode(text));
  await w.close();
}
