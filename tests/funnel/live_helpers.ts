// Helpers for the live tests: a funnel serving MoQ on 127.0.0.1:0 with a
// development certificate, and subscribers that dial it (ours and @moq/net).
import * as Net from "@moq/net";
import { loadFunnelConfig } from "../../src/config/funnel.ts";
import { type FunnelDependencies, type RunningFunnel, startFunnel } from "../../src/funnel/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import {
  connect,
  type MoqSession,
  type ReceivedGroup,
  type Subscription,
  VERSIONS,
} from "../../src/moq/mod.ts";
import { connectQuicSession } from "../../src/transport/quic.ts";
import type { Session } from "../../src/transport/mod.ts";
import { asWebTransport, connectWebTransport } from "../../src/transport/webtransport/mod.ts";
import { devCert } from "../relay/_relay.ts";

export { devCert, quiet, seeAnnounced, until } from "../relay/_relay.ts";

const decoder = new TextDecoder();

/** A live funnel under test. */
export interface LiveFunnel extends AsyncDisposable {
  readonly funnel: RunningFunnel;
  /** HTTP base URL. */
  readonly base: string;
  /** The own MoQ listener's UDP port. */
  readonly moqPort: number;
  /** Temporary directory holding the certificate files. */
  readonly dir: string;
}

/** Writes the dev certificate as files in a fresh temporary directory. */
export async function certFiles(): Promise<{ dir: string; cert: string; key: string }> {
  const c = await devCert();
  const dir = await Deno.makeTempDir({ prefix: "sluice-live-" });
  await Deno.writeTextFile(`${dir}/cert.pem`, c.certPem);
  await Deno.writeTextFile(`${dir}/key.pem`, c.keyPem);
  return { dir, cert: `${dir}/cert.pem`, key: `${dir}/key.pem` };
}

/** Starts a funnel serving MoQ on 127.0.0.1:0 (unless `env` says otherwise). */
export async function startLiveFunnel(
  env: Record<string, string> = {},
  deps: FunnelDependencies = {},
): Promise<LiveFunnel> {
  const files = await certFiles();
  const funnel = await startFunnel(
    loadFunnelConfig({
      FUNNEL_ADDR: "127.0.0.1:0",
      FUNNEL_SERVE_ADDR: "127.0.0.1:0",
      CERT_FILE: files.cert,
      KEY_FILE: files.key,
      ...env,
    }),
    { log: silentLogger, ...deps },
  );
  return {
    funnel,
    base: `http://127.0.0.1:${funnel.addr.port}`,
    moqPort: funnel.live.listener?.addr.port ?? 0,
    dir: files.dir,
    [Symbol.asyncDispose]: async () => {
      await funnel.stop();
      await Deno.remove(files.dir, { recursive: true });
    },
  };
}

/** Dials a MoQ endpoint with our client: native QUIC (`alpn`) or WebTransport. */
export async function dialMoq(
  port: number,
  options: {
    jwt?: string;
    alpn?: string;
    webTransport?: boolean;
    origin?: string;
    maxUni?: number;
    wrap?: (session: Session) => Session;
  } = {},
): Promise<MoqSession> {
  const c = await devCert();
  const query = options.jwt === undefined ? "" : `?jwt=${options.jwt}`;
  if (options.webTransport) {
    const session = await connectWebTransport(new URL(`https://localhost:${port}/${query}`), {
      protocols: VERSIONS,
      serverCertificateHashes: [c.sha256],
      ...(options.origin ? { origin: options.origin } : {}),
    });
    return await connect(session);
  }
  const session = await connectQuicSession(new URL(`moqt://localhost:${port}/${query}`), {
    alpn: VERSIONS,
    serverCertificateHashes: [{ algorithm: "sha-256", value: c.sha256 }],
    ...(options.alpn ? { alpn: [options.alpn] } : {}),
    ...(options.maxUni ? { maxConcurrentUnidirectionalStreams: options.maxUni } : {}),
  });
  return await connect(options.wrap ? options.wrap(session) : session);
}

/**
 * Dials with @moq/net: over native QUIC, or (`webTransport`) over our
 * WebTransport client, which carries the URL's `jwt` in the CONNECT request.
 */
export async function dialNet(
  port: number,
  options: { version?: string; jwt?: string; webTransport?: boolean } = {},
): Promise<Awaited<ReturnType<typeof Net.Connection.connect>>> {
  const c = await devCert();
  if (options.webTransport) {
    const url = new URL(`https://localhost:${port}/${options.jwt ? `?jwt=${options.jwt}` : ""}`);
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
  const query = options.jwt === undefined ? "" : `?jwt=${options.jwt}`;
  return await Net.Connection.connect(new URL(`https://localhost:${port}/${query}`), {
    transport: quic as unknown as WebTransport,
  });
}

/** A received group as the test compares it: sequence and frame text. */
export interface Got {
  readonly seq: number;
  readonly frame: string;
}

/** Reads the next `n` groups of a subscription. */
export async function take(sub: Subscription, n: number): Promise<Got[]> {
  const it = sub[Symbol.asyncIterator]();
  const out: Got[] = [];
  while (out.length < n) {
    const r: IteratorResult<ReceivedGroup> = await it.next();
    if (r.done) throw new Error(`Subscription ended after ${out.length} of ${n} groups`);
    out.push({ seq: r.value.sequence, frame: decoder.decode(r.value.frames[0]) });
  }
  return out;
}

/** Posts a JSON body; returns the committed group. */
export async function post(
  base: string,
  path: string,
  body: string,
  token?: string,
): Promise<{ group: string; status: number }> {
  const response = await fetch(`${base}/tracks/${path}`, {
    method: "POST",
    body,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const text = await response.text();
  if (response.status !== 201) return { group: "", status: response.status };
  return { group: JSON.parse(text).group, status: response.status };
}

/** Sends a request and drops the body; returns the status. */
export async function send(
  base: string,
  method: string,
  path: string,
  token?: string,
): Promise<number> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  await response.body?.cancel();
  return response.status;
}

/** A session whose incoming unidirectional streams (MoQ groups) are not accepted while held. */
export function stallable(session: Session): { session: Session; hold(): void; release(): void } {
  let gate: Promise<void> | undefined;
  let open = (): void => {};
  const wrapped: Session = {
    transport: session.transport,
    protocol: session.protocol,
    url: session.url,
    remote: session.remote,
    closed: session.closed,
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
