import type { Session } from "../session.ts";
import { H3ConnectionError } from "../h3/mod.ts";
import { encodeFrame, FrameType } from "../h3/mod.ts";
import { H3Connection } from "../h3/mod.ts";
import type { Timers } from "../../timers/mod.ts";
import { headersPayload, headerValue, isWellFormed, readHeaders } from "../h3/mod.ts";
import { type HeaderField, HeaderTooLargeError } from "../h3/mod.ts";
import type { StreamReader } from "../../wire/mod.ts";
import { parseStringList, serializeString } from "../h3/mod.ts";
import { WebTransportSession } from "./wt_session.ts";

/** What the application sees before deciding to accept a WebTransport session. */
export interface WebTransportRequest {
  /** Always "CONNECT" (other methods never reach the admission callback). */
  readonly method: string;
  /** `https://{authority}{path}`. */
  readonly url: URL;
  /** The request path, without the query. */
  readonly path: string;
  /** The query parameters (e.g. `jwt`). */
  readonly query: URLSearchParams;
  /** The `origin` header, when the client sent one (browsers always do). */
  readonly origin: string | undefined;
  /** Protocols offered in `wt-available-protocols`, in the client's order (empty when none). */
  readonly protocols: readonly string[];
  /** Every request header line, pseudo-headers included. */
  readonly headers: readonly HeaderField[];
  /** The peer's address as host:port. */
  readonly remote: string;
}

/**
 * The application's answer: accept with a protocol (one of the offered ones;
 * ignored when the client offered none, which makes the session moq-lite-04),
 * or refuse with a status.
 */
export type Admission =
  | { readonly status: 200; readonly protocol: string }
  | { readonly status: 400 | 401 | 403 | 404 | 429 | 500 | 503; readonly reason?: string };

/** Decides whether to accept a WebTransport session. */
export type AdmitWebTransport = (req: WebTransportRequest) => Admission | Promise<Admission>;

/**
 * Picks the protocol for an offer: the first of `preferred` that the client
 * offered; "moq-lite-04" when the client offered nothing (as the reference
 * relay does); undefined when nothing matches.
 */
export function chooseProtocol(
  offered: readonly string[],
  preferred: readonly string[],
): string | undefined {
  if (offered.length === 0) return "moq-lite-04";
  return preferred.find((p) => offered.includes(p));
}

/**
 * An admission that accepts any path, choosing the protocol from
 * `preferred` with {@link chooseProtocol}; 400 when no protocol matches.
 */
export function admitAny(preferred: readonly string[]): AdmitWebTransport {
  return (req) => {
    const protocol = chooseProtocol(req.protocols, preferred);
    return protocol === undefined
      ? { status: 400, reason: "No supported protocol offered" }
      : { status: 200, protocol };
  };
}

/** Options for serving WebTransport on one accepted `h3` QUIC connection. */
export interface ServeWebTransportOptions {
  /** Decides each CONNECT before a session exists (e.g. {@link admitAny}). */
  readonly admit: AdmitWebTransport;
  /** Receives each accepted session. */
  readonly onSession: (session: Session) => void;
  /** Largest request header section (default 16384). */
  readonly maxFieldSectionSize?: number;
  /** Close connections that open no session within this time (default 10000 ms). */
  readonly sessionTimeoutMs?: number;
  /** WT streams buffered before their CONNECT is answered (default 64). */
  readonly maxBufferedStreams?: number;
  /** Timer functions (tests). */
  readonly timers?: Timers;
}

/** Matches the WEBTRANSPORT_MAX_SESSIONS we advertise. */
const MAX_SESSIONS_PER_CONNECTION = 16;

const PSEUDO = new Set([":method", ":scheme", ":authority", ":path", ":protocol"]);

/**
 * Serves HTTP/3 WebTransport on an accepted QUIC connection (ALPN `h3`):
 * SETTINGS, extended CONNECT with admission, sessions. Returns the HTTP/3
 * connection (its `settled()` resolves after it closed and cleaned up).
 */
export function serveWebTransport(
  conn: Deno.QuicConn,
  options: ServeWebTransportOptions,
): H3Connection {
  const admit = options.admit;
  const h3: H3Connection = new H3Connection(conn, {
    role: "server",
    ...(options.maxFieldSectionSize !== undefined
      ? { maxFieldSectionSize: options.maxFieldSectionSize }
      : {}),
    ...(options.sessionTimeoutMs !== undefined
      ? { sessionTimeoutMs: options.sessionTimeoutMs }
      : {}),
    ...(options.maxBufferedStreams !== undefined
      ? { maxBufferedStreams: options.maxBufferedStreams }
      : {}),
    ...(options.timers ? { timers: options.timers } : {}),
    onRequest: (stream, reader, firstType) =>
      handleRequest(h3, stream, reader, firstType, admit, options.onSession),
  });
  h3.start();
  return h3;
}

/** The request stream of one CONNECT, and how to refuse it. */
interface RequestStream {
  readonly h3: H3Connection;
  readonly id: number;
  readonly reader: StreamReader;
  readonly writer: WritableStreamDefaultWriter<Uint8Array>;
}

/** A CONNECT that asks for a WebTransport session, as far as its headers say. */
interface ConnectRequest {
  readonly url: URL;
  /** WT-Available-Protocols, in the client's order. */
  readonly offered: string[];
}

async function handleRequest(
  h3: H3Connection,
  stream: Deno.QuicBidirectionalStream,
  reader: StreamReader,
  firstType: number,
  admit: AdmitWebTransport,
  onSession: (session: Session) => void,
): Promise<void> {
  const req: RequestStream = {
    h3,
    id: Number(stream.writable.id),
    reader,
    writer: stream.writable.getWriter(),
  };
  const fields = await readRequestHeaders(req, firstType);
  if (fields === undefined) return;
  const connect = parseConnect(fields);
  if ("status" in connect) return await refuse(req, connect.status, connect.reason);
  const { url, offered } = connect;
  let decision: Admission | undefined;
  try {
    // A connection that closes while the application deliberates ends the wait.
    decision = await raceClosed(
      h3,
      admit({
        method: "CONNECT",
        url,
        path: url.pathname,
        query: url.searchParams,
        origin: headerValue(fields, "origin"),
        protocols: offered,
        headers: fields,
        remote: h3.remote,
      }),
    );
  } catch {
    return await refuse(req, 500, "Admission failed");
  }
  if (decision === undefined || h3.isClosed) return;
  if (h3.sessionCount >= MAX_SESSIONS_PER_CONNECTION) {
    return await refuse(req, 429, "Too many sessions on this connection");
  }
  if (decision.status !== 200) return await refuse(req, decision.status, decision.reason ?? "");
  if (offered.length > 0 && !offered.includes(decision.protocol)) {
    return await refuse(req, 400, `Protocol "${decision.protocol}" was not offered`);
  }
  await acceptSession(req, connect, decision.protocol, onSession);
}

// Refuses the request with `status` (and `reason` as a text body).
async function refuse(req: RequestStream, status: number, reason = ""): Promise<void> {
  req.h3.refuseSession(req.id);
  req.reader.cancel();
  const fields: HeaderField[] = [[":status", String(status)]];
  if (reason) fields.push(["content-type", "text/plain;charset=utf-8"]);
  const parts = [encodeFrame(FrameType.HEADERS, headersPayload(fields))];
  if (reason) parts.push(encodeFrame(FrameType.DATA, new TextEncoder().encode(reason)));
  try {
    for (const p of parts) await req.writer.write(p);
    await req.writer.close();
  } catch {
    // peer gone
  }
}

// The request's header fields; undefined when the request was refused for want of them.
async function readRequestHeaders(
  req: RequestStream,
  firstType: number,
): Promise<HeaderField[] | undefined> {
  let fields: HeaderField[] | undefined;
  try {
    fields = await readHeaders(req.reader, req.h3.maxFieldSectionSize, firstType);
  } catch (err) {
    if (err instanceof HeaderTooLargeError) {
      await refuse(req, 431, err.message);
      return undefined;
    }
    if (err instanceof H3ConnectionError) throw err;
    fields = undefined; // reset or truncated: the request is incomplete
  }
  if (fields === undefined) {
    req.h3.refuseSession(req.id);
    // The request is refused either way; a failed FIN changes nothing.
    req.writer.close().catch(() => {});
  }
  return fields;
}

// A well-formed WebTransport CONNECT, or the status and reason to refuse it with.
function parseConnect(
  fields: HeaderField[],
): ConnectRequest | { status: number; reason: string } {
  if (!isWellFormed(fields, PSEUDO)) return { status: 400, reason: "Malformed request headers" };
  const method = headerValue(fields, ":method");
  if (method !== "CONNECT") return { status: 405, reason: "Only WebTransport CONNECT is served" };
  const protocol = headerValue(fields, ":protocol");
  const scheme = headerValue(fields, ":scheme");
  const authority = headerValue(fields, ":authority");
  const path = headerValue(fields, ":path");
  if (protocol !== "webtransport") {
    return { status: 400, reason: "Expected :protocol webtransport" };
  }
  if (scheme !== "https" || !authority || !path || !path.startsWith("/")) {
    return { status: 400, reason: "Missing or bad :scheme, :authority or :path" };
  }
  try {
    const url = new URL(`https://${authority}${path}`);
    const offered = fields.filter((f) => f[0] === "wt-available-protocols")
      .flatMap((f) => parseStringList(f[1]));
    return { url, offered };
  } catch (err) {
    return { status: 400, reason: (err as Error).message };
  }
}

// Answers 200 and hands the session to the application.
async function acceptSession(
  req: RequestStream,
  { url, offered }: ConnectRequest,
  protocol: string,
  onSession: (session: Session) => void,
): Promise<void> {
  const { h3, id, reader, writer } = req;
  const response: HeaderField[] = [
    [":status", "200"],
    ["sec-webtransport-http3-draft", "draft02"],
  ];
  if (offered.length > 0) response.push(["wt-protocol", serializeString(protocol)]);
  try {
    await writer.write(encodeFrame(FrameType.HEADERS, headersPayload(response)));
  } catch {
    h3.refuseSession(id);
    return;
  }
  const session = new WebTransportSession({
    host: h3,
    id,
    writer,
    reader,
    // Without wt-available-protocols the client cannot learn a WT-Protocol, so it
    // speaks the un-negotiated handshake: the session is lite-04 whatever was chosen.
    protocol: offered.length > 0 ? protocol : "moq-lite-04",
    url,
    remote: h3.remote,
  });
  h3.addSession(session);
  try {
    onSession(session);
  } catch {
    session.close(1, "Session handler failed");
  }
}

function raceClosed<T>(h3: H3Connection, value: T | Promise<T>): Promise<T | undefined> {
  return Promise.race([Promise.resolve(value), h3.closed.then(() => undefined)]);
}
