// Test helpers: a relay on port 0 with a dev certificate, and clients that dial it.
import * as Net from "@moq/net";
import {
  createVerifier,
  MemoryKeySource,
  signToken,
  type TokenClaims,
  type Verifier,
} from "../../src/auth/mod.ts";
import { testCert as devCert } from "../support/moq.ts";
import { connect, type MoqSession, type MoqSessionOptions, VERSIONS } from "../../src/moq/mod.ts";
import { type RunningRelay, startRelay } from "../../src/relay/mod.ts";
import { connectQuicSession } from "../../src/transport/quic.ts";
import type { Session } from "../../src/transport/mod.ts";
import { keySetOf, makeKey, type TestKey } from "../auth/helpers.ts";

export { seeAnnounced, testCert as devCert } from "../support/moq.ts";

/** A relay under test plus what tests need to reach it. */
export interface TestRelay {
  relay: RunningRelay;
  port: number;
  logs: string[];
  http: Deno.HttpClient;
  /** GETs a relay HTTP path. */
  get(path: string): Promise<Response>;
  /** Signs a credential accepted by this relay (auth on only). */
  token(claims: TokenClaims, ttlSeconds?: number): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a relay on 127.0.0.1:0; `auth` turns on a key set with one fresh key. */
export async function startTestRelay(
  options: { auth?: boolean; cacheSize?: number; rttIntervalMs?: number; pprof?: boolean } = {},
): Promise<TestRelay> {
  const c = await devCert();
  let key: TestKey | undefined;
  let verifier: Verifier | undefined;
  if (options.auth) {
    key = await makeKey();
    verifier = await createVerifier(new MemoryKeySource(await keySetOf(key)));
  }
  const logs: string[] = [];
  let relay: RunningRelay | undefined;
  // UDP port 0 then the same TCP port: retry in the rare case that TCP port is taken.
  for (let attempt = 0; relay === undefined; attempt++) {
    try {
      relay = await startRelay({
        hostname: "127.0.0.1",
        port: 0,
        tls: { certPem: c.certPem, keyPem: c.keyPem },
        groupCacheSize: options.cacheSize ?? 8,
        pprof: options.pprof ?? false,
        corsAllowedOrigins: ["https://app.example"],
        verifier,
        log: (l) => logs.push(l),
        rttIntervalMs: options.rttIntervalMs ?? 0,
        idleMs: 200,
      });
    } catch (e) {
      if (!(e instanceof Deno.errors.AddrInUse) || attempt > 5) throw e;
    }
  }
  const http = Deno.createHttpClient({ caCerts: [c.certPem] });
  const port = relay.addr.port;
  const r = relay;
  return {
    relay: r,
    port,
    logs,
    http,
    get: (path) => fetch(`https://localhost:${port}${path}`, { client: http }),
    token: (claims, ttlSeconds = 600) => {
      if (!key) throw new TypeError("auth is off");
      return signToken(key.privateJwk, claims, { ttlSeconds });
    },
    stop: async () => {
      await r.stop();
      verifier?.close();
      http.close();
    },
  };
}

/** Dials the relay with our moq client over native QUIC. */
export async function dialOurs(
  port: number,
  options: {
    jwt?: string;
    alpn?: string;
    maxUni?: number;
    wrap?: (s: Session) => Session;
    moq?: MoqSessionOptions;
  } = {},
): Promise<MoqSession> {
  const c = await devCert();
  const q = options.jwt === undefined ? "" : `?jwt=${options.jwt}`;
  const session = await connectQuicSession(new URL(`moqt://localhost:${port}/${q}`), {
    alpn: VERSIONS,
    serverCertificateHashes: [{ algorithm: "sha-256", value: c.sha256 }],
    ...(options.alpn ? { alpn: [options.alpn] } : {}),
    ...(options.maxUni ? { maxConcurrentUnidirectionalStreams: options.maxUni } : {}),
  });
  return connect(options.wrap ? options.wrap(session) : session, options.moq ?? {});
}

/** Dials the relay with @moq/net over native QUIC. */
export async function dialNet(
  port: number,
  version = "moq-lite-05",
): Promise<Awaited<ReturnType<typeof Net.Connection.connect>>> {
  const c = await devCert();
  const quic = await Deno.connectQuic({
    hostname: "127.0.0.1",
    port,
    alpnProtocols: [version],
    caCerts: [c.certPem],
    serverName: "localhost",
    maxConcurrentUnidirectionalStreams: 1000,
  });
  return Net.Connection.connect(new URL(`https://localhost:${port}/`), {
    transport: quic as unknown as WebTransport,
  });
}

/** The peer libraries log every request with console.debug; keep test output readable. */
export function quiet(): Disposable {
  const debug = console.debug;
  console.debug = () => {};
  return { [Symbol.dispose]: () => (console.debug = debug) };
}

/** Waits until `cond()` holds, checking after each macrotask (no fixed delay is asserted). */
export async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`Timed out waiting for ${what}`);
}
