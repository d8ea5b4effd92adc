// MoQ test helpers shared by the moq, WebTransport, relay and funnel tests:
// dialing with our client and with @moq/net, announcement waits, and a session
// whose incoming groups can be held back.
import * as Net from "@moq/net";
import TheirQMux from "@moq/qmux";
import {
  connect,
  IETF_VERSION,
  ietfCodec as c,
  type IetfDraft,
  type MoqSession,
  type MoqSessionOptions,
  VERSIONS,
} from "../../src/moq/mod.ts";
import type { Session } from "../../src/transport/mod.ts";
import { connectQMux, type QMuxDraft } from "../../src/transport/mod.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import { asWebTransport, connectWebTransport } from "../../src/transport/mod.ts";
import { StreamReader } from "../../src/wire/mod.ts";
import { testCertificate } from "./certs.ts";
import { webSocketOnly } from "./qmux.ts";
import { within } from "./wait.ts";

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
    /** More URL query parameters, as `name=value&...` (such as the relay's `peer=<name>`). */
    query?: string;
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
  const params = [options.query, options.jwt === undefined ? undefined : `jwt=${options.jwt}`]
    .filter((p) => p !== undefined);
  const query = params.length === 0 ? "" : `?${params.join("&")}`;
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

/** A broadcast path as `@moq/net` takes it, for callers outside the tests' import map (bench/). */
export function netPath(path: string): Net.Path.Valid {
  return Net.Path.from(path);
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

/**
 * Dials with @moq/net forced to one IETF MoQ Transport draft over native
 * QUIC, offering only that draft's ALPN. Draft 14's `moq-00` is hidden from
 * @moq/net (it knows it only as "no protocol", and then runs the draft-14
 * CLIENT_SETUP, in which the relay picks draft 14); draft 16's `moqt-16` it
 * reads itself.
 */
export async function dialNetIetf(
  port: number,
  draft: 14 | 16 | 20 = 14,
): Promise<Awaited<ReturnType<typeof Net.Connection.connect>>> {
  const c = await testCertificate();
  const alpn = draft === 14 ? "moq-00" : `moqt-${draft}`;
  const quic = await Deno.connectQuic({
    hostname: "127.0.0.1",
    port,
    alpnProtocols: [alpn],
    caCerts: [c.certPem],
    serverName: "localhost",
    maxConcurrentUnidirectionalStreams: 1000,
  });
  if (quic.protocol !== alpn) throw new Error(`negotiated "${quic.protocol}", not ${alpn}`);
  const view = draft !== 14 ? quic : new Proxy(quic, {
    get(target, key) {
      if (key === "protocol") return "";
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const url = new URL(`https://localhost:${port}/`);
  return await Net.Connection.connect(url, { transport: view as unknown as WebTransport });
}

/**
 * Dials with @moq/net forced to IETF draft 16 or 20 over a web transport:
 * its own QMux over WebSocket (`@moq/qmux`, offering only that draft's token,
 * draft 20 on qmux-01 as @moq/net pins it), or our WebTransport client
 * offering only that token.
 */
export async function dialNetIetfWeb(
  port: number,
  via: "websocket" | "webtransport",
  draft: 16 | 20 = 16,
  jwt?: string,
): Promise<Awaited<ReturnType<typeof Net.Connection.connect>>> {
  const token = `moqt-${draft}`;
  const c = await testCertificate();
  // The credential travels in the URL, as a browser's would.
  const url = new URL(`https://localhost:${port}/${jwt === undefined ? "" : `?jwt=${jwt}`}`);
  if (via === "webtransport") {
    const wt = await connectWebTransport(url, {
      protocols: [token],
      serverCertificateHashes: [c.sha256],
    });
    return await Net.Connection.connect(url, {
      transport: asWebTransport(wt) as unknown as WebTransport,
    });
  }
  using _ = webSocketOnly(c.certPem);
  const session = new TheirQMux(new URL(`wss://localhost:${port}/${url.search}`), {
    protocols: [token],
    versions: { [token]: draft === 20 ? "qmux-01" : null },
  });
  await session.ready;
  return await Net.Connection.connect(url, { transport: session as unknown as WebTransport });
}

/** A raw draft-14 IETF client: its QUIC session, control messages sent and awaited. */
export interface RawIetf {
  /** The native QUIC session. */
  readonly session: Session;
  /** The next control message of one of `types` (others skipped); rejects after 5 s. */
  answer(...types: number[]): Promise<c.ControlMessage>;
  /** Sends one control message. */
  send(type: number, body: Uint8Array): Promise<void>;
}

/**
 * Dials with a raw draft-14 client over native QUIC: its CLIENT_SETUP (with
 * PATH when given, which carries the credential as `/?jwt=`), then its
 * control stream, for requests @moq/net cannot make.
 */
export async function rawIetf(port: number, path?: string): Promise<RawIetf> {
  const cert = await testCertificate();
  const session = await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
    alpn: ["moq-00"],
    serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
  });
  const stream = await session.openBidi();
  const w = stream.writable.getWriter();
  const r = new StreamReader(stream.readable);
  const params: c.Parameters = new Map<bigint, bigint | Uint8Array>([
    [c.SetupParam.MaxRequestId, 100n],
  ]);
  if (path !== undefined) params.set(c.SetupParam.Path, new TextEncoder().encode(path));
  await w.write(
    c.frameControl(
      c.Msg.ClientSetup,
      c.encodeClientSetup({ versions: [IETF_VERSION[14]], params }, 14),
    ),
  );
  const next = async (): Promise<c.ControlMessage> => {
    const m = await within(c.readControl(r), 5000, "a control message");
    if (!m) throw new Error("the control stream ended");
    return m;
  };
  return {
    session,
    answer: async (...types) => {
      for (;;) {
        const m = await next();
        if (types.includes(m.type)) return m;
      }
    },
    send: (type, body) => w.write(c.frameControl(type, body)),
  };
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

/**
 * Reads the next fetch stream the peer opens on `session` (skipping
 * subscription groups): its request id, and each object as "group.object
 * payload".
 */
export async function readFetchStream(
  session: Session,
  draft: IetfDraft,
  descending = false,
): Promise<{ id: bigint; objects: string[] }> {
  for (;;) {
    const s = await within(session.acceptUni(), 10_000, "a fetch stream");
    if (!s) throw new Error("the session ended");
    const r = new StreamReader(s.readable);
    if (await r.u8() !== c.FETCH_STREAM) continue;
    const id = await c.readFetchHeader(r, draft);
    const cursor: c.FetchCursor = { previous: undefined, priority: 0, descending };
    const objects: string[] = [];
    for (;;) {
      const o = await c.readFetchObject(r, cursor, 1 << 20, draft);
      if (!o) return { id, objects };
      objects.push(`${o.at.group}.${o.at.object} ${new TextDecoder().decode(o.payload)}`);
    }
  }
}

/** A request's answers, read one by one; `send` sends more on the request (an update). */
export type RawAnswers = (() => Promise<c.ControlMessage>) & {
  send(type: number, body: Uint8Array): Promise<void>;
};

/** A raw IETF client's requests. */
export interface RawRequester {
  client: Session;
  /** Sends a request; returns a reader of its answers. */
  request(type: number, body: Uint8Array): Promise<RawAnswers>;
}

/**
 * A raw IETF client on `client` (set up for `draft`, with the setup `path`
 * when given, which carries the credential on native QUIC): sends requests and reads each one's
 * answers, on the control stream (drafts 14 and 16, what is not an answer
 * skipped) or the request's own stream (draft 20).
 */
export async function rawClient(
  client: Session,
  draft: IetfDraft,
  path?: string,
): Promise<RawRequester> {
  if (draft >= 17) {
    const setup = (await client.openUni()).writable.getWriter();
    const options: c.Parameters = new Map();
    if (path !== undefined) options.set(c.SetupParam.Path, new TextEncoder().encode(path));
    await setup.write(c.frameControl(c.Msg.Setup, c.encodeSetupOptions(options, draft), draft));
    return {
      client,
      request: async (type, body) => {
        const s = await client.openBidi();
        const sw = s.writable.getWriter();
        await sw.write(c.frameControl(type, body, draft));
        const r = new StreamReader(s.readable);
        return Object.assign(async () => {
          const m = await within(c.readControl(r, draft), 5000, "an answer");
          if (!m) throw new Error("the request stream ended");
          return m;
        }, { send: (t: number, b: Uint8Array) => sw.write(c.frameControl(t, b, draft)) });
      },
    };
  }
  const s = await client.openBidi();
  const w = s.writable.getWriter();
  const r = new StreamReader(s.readable);
  const params: c.Parameters = new Map([[c.SetupParam.MaxRequestId, 1000n]]);
  if (path !== undefined) params.set(c.SetupParam.Path, new TextEncoder().encode(path));
  await w.write(
    c.frameControl(
      c.Msg.ClientSetup,
      c.encodeClientSetup({ versions: [IETF_VERSION[draft]], params }, draft),
    ),
  );
  // Skips what is not an answer to our requests (SERVER_SETUP, its SUBSCRIBE_NAMESPACE...).
  const answers = new Set<number>([
    c.Msg.SubscribeOk,
    c.Msg.FetchOk,
    c.Msg.RequestError,
    c.Msg.FetchError,
    c.Msg.TrackStatus,
    c.Msg.TrackStatusError,
    c.Msg.RequestOk,
    c.Msg.PublishDone,
    c.Msg.PublishOk,
    c.Msg.PublishError,
    c.Msg.SubscribeNamespaceOk,
    c.Msg.SubscribeNamespaceError,
  ]);
  const next = async (): Promise<c.ControlMessage> => {
    for (;;) {
      const m = await within(c.readControl(r, draft), 5000, "an answer");
      if (!m) throw new Error("the control stream ended");
      if (answers.has(m.type)) return m;
    }
  };
  const send = (t: number, b: Uint8Array): Promise<void> => w.write(c.frameControl(t, b, draft));
  return {
    client,
    request: async (type, body) => {
      await send(type, body);
      return Object.assign(next, { send });
    },
  };
}
