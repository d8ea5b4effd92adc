import { redactUrl } from "../../error_text/mod.ts";
import type { Session } from "../session.ts";
import { H3Code, H3ConnectionError } from "../h3/mod.ts";
import { WebTransportRefusedError } from "./errors.ts";
import { encodeFrame, FrameType } from "../h3/mod.ts";
import { H3Connection } from "../h3/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import { headersPayload, headerValue, readHeaders } from "../h3/mod.ts";
import type { HeaderField } from "../h3/mod.ts";
import { supportsWebTransport } from "../h3/mod.ts";
import { StreamReader } from "../../wire/mod.ts";
import { parseStringItem, serializeStringList } from "../h3/mod.ts";
import { WebTransportSession } from "./wt_session.ts";

/** Options for {@link connectWebTransport}. */
export interface ConnectWebTransportOptions {
  /** Offered in `wt-available-protocols`, preferred first: the application's protocols (moq's `VERSIONS`). */
  readonly protocols: readonly string[];
  /** Extra PEM root certificates to trust (e.g. the relay's CA file contents). */
  readonly caCerts?: readonly string[];
  /** Pin the server certificate by SHA-256 (self-signed, ≤ 14 days), as browsers do. */
  readonly serverCertificateHashes?: readonly Uint8Array[];
  /**
   * Skip certificate verification. Deno offers no per-connection switch, so
   * this only works when the process runs with
   * `--unsafely-ignore-certificate-errors`; otherwise it throws TypeError.
   */
  readonly insecure?: boolean;
  /** Sent as the `origin` header when set. */
  readonly origin?: string;
  /** Give up when the session is not established within this time (default 10000 ms). */
  readonly timeoutMs?: number;
  /** Protocol to assume when the server answers without `wt-protocol` (default "moq-lite-04"). */
  readonly defaultProtocol?: string;
  /** QUIC limit on concurrent incoming uni streams (default 1000). */
  readonly maxConcurrentUnidirectionalStreams?: number;
  /** QUIC limit on concurrent incoming bidi streams (default 100). */
  readonly maxConcurrentBidirectionalStreams?: number;
  /** QUIC idle timeout, ms: a peer silent this long is gone (default 30000, as native QUIC dials). */
  readonly maxIdleTimeout?: number;
  /** QUIC keep-alive interval, ms, so a quiet session is not taken for a dead one (default 10000). */
  readonly keepAliveInterval?: number;
  /** Timer functions (tests). */
  readonly timers?: Timers;
}

/**
 * Opens a WebTransport session over HTTP/3 to an `https://` URL (path and
 * query go in the CONNECT request). Rejects with WebTransportRefusedError
 * (carrying the HTTP status) when the server refuses.
 *
 * @example
 * ```ts
 * const session = await connectWebTransport(new URL("https://relay:4443/live?jwt=..."), {
 *   protocols: VERSIONS, // from src/moq: moq-lite-05, moq-lite-04
 *   caCerts: [await Deno.readTextFile("ca.pem")],
 * });
 * console.log(session.protocol); // "moq-lite-05"
 * ```
 */
export async function connectWebTransport(
  url: URL,
  options: ConnectWebTransportOptions,
): Promise<Session> {
  if (url.protocol !== "https:") {
    throw new TypeError(
      `Cannot open WebTransport to "${redactUrl(url)}": the scheme must be https`,
    );
  }
  const protocols = options.protocols;
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const port = url.port === "" ? 443 : Number(url.port);
  const quicOptions: Deno.ConnectQuicOptions<false> & {
    serverCertificateHashes?: { algorithm: string; value: Uint8Array }[];
  } = {
    hostname,
    port,
    alpnProtocols: ["h3"],
    maxConcurrentUnidirectionalStreams: options.maxConcurrentUnidirectionalStreams ?? 1000,
    maxConcurrentBidirectionalStreams: options.maxConcurrentBidirectionalStreams ?? 100,
    // Without these Deno's defaults apply: no keep-alive, so a session with
    // nothing to send times out, and a vanished peer is noticed only then.
    maxIdleTimeout: options.maxIdleTimeout ?? 30_000,
    keepAliveInterval: options.keepAliveInterval ?? 10_000,
  };
  if (!/^[0-9.]+$/.test(hostname) && !hostname.includes(":")) quicOptions.serverName = hostname;
  if (options.caCerts) quicOptions.caCerts = [...options.caCerts];
  if (options.serverCertificateHashes) {
    quicOptions.serverCertificateHashes = options.serverCertificateHashes.map((value) => ({
      algorithm: "sha-256",
      value,
    }));
  }
  const timers = options.timers ?? systemTimers;
  const timeoutMs = options.timeoutMs ?? 10_000;
  let timer: unknown;
  let timedOut = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = timers.setTimeout(() => {
      timedOut = true;
      reject(new Error(`WebTransport handshake with ${url.host} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    const dialing = Deno.connectQuic(quicOptions);
    // A dial that completes after the timeout must not leak its connection.
    dialing.then((c) => {
      if (timedOut) c.close({ closeCode: H3Code.NO_ERROR, reason: "timed out" });
    }, () => {});
    let conn: Deno.QuicConn;
    try {
      conn = await Promise.race([dialing, timeout]);
    } catch (err) {
      if (options.insecure && !timedOut) {
        throw new TypeError(
          `Cannot connect insecurely to "${url.host}": run Deno with --unsafely-ignore-certificate-errors (${
            (err as Error).message
          })`,
        );
      }
      throw err;
    }
    const h3 = new H3Connection(conn, { role: "client", timers });
    h3.start();
    try {
      return await Promise.race([handshake(h3, url, protocols, options), timeout]);
    } catch (err) {
      h3.fail(
        err instanceof H3ConnectionError ? err.wireCode : H3Code.NO_ERROR,
        (err as Error).message,
      );
      await h3.settled();
      throw err;
    }
  } finally {
    if (timer !== undefined) timers.clearTimeout(timer);
  }
}

async function handshake(
  h3: H3Connection,
  url: URL,
  protocols: readonly string[],
  options: ConnectWebTransportOptions,
): Promise<Session> {
  const settings = await h3.peerSettings;
  if (!supportsWebTransport(settings)) {
    throw new Error(`Server at ${url.host} does not support WebTransport over HTTP/3`);
  }
  const stream = await h3.conn.createBidirectionalStream();
  const writer = stream.writable.getWriter();
  const request: HeaderField[] = [
    [":method", "CONNECT"],
    [":protocol", "webtransport"],
    [":scheme", "https"],
    [":authority", url.host],
    [":path", `${url.pathname}${url.search}`],
    ["sec-webtransport-http3-draft02", "1"],
  ];
  if (options.origin) request.push(["origin", options.origin]);
  if (protocols.length > 0) {
    request.push(["wt-available-protocols", serializeStringList(protocols)]);
  }
  await writer.write(encodeFrame(FrameType.HEADERS, headersPayload(request)));

  const reader = new StreamReader(stream.readable);
  let fields: HeaderField[] | undefined;
  for (;;) {
    fields = await readHeaders(reader, h3.maxFieldSectionSize);
    if (fields === undefined) {
      throw new Error("Server closed the CONNECT stream without a response");
    }
    const s = Number(headerValue(fields, ":status"));
    if (s >= 200 || Number.isNaN(s)) break; // skip 1xx interim responses
  }
  const status = Number(headerValue(fields, ":status"));
  if (!(status >= 200 && status < 300)) {
    const reason = await readRefusalBody(reader);
    reader.cancel();
    // The session is refused either way; a failed FIN changes nothing.
    writer.close().catch(() => {});
    throw new WebTransportRefusedError(
      Number.isNaN(status) ? 0 : status,
      `WebTransport session refused with status ${status}${reason ? `: ${reason}` : ""}`,
    );
  }
  const wtProtocol = headerValue(fields, "wt-protocol");
  let protocol = options.defaultProtocol ?? "moq-lite-04";
  if (wtProtocol !== undefined) {
    protocol = parseStringItem(wtProtocol);
    if (!protocols.includes(protocol)) {
      throw new H3ConnectionError(
        H3Code.MESSAGE_ERROR,
        `Server chose unoffered protocol "${protocol}"`,
      );
    }
  }
  const session = new WebTransportSession({
    host: h3,
    id: Number(stream.writable.id),
    writer,
    reader,
    protocol,
    url,
    remote: h3.remote,
  });
  h3.addSession(session);
  return session;
}

async function readRefusalBody(reader: StreamReader): Promise<string> {
  try {
    const type = await reader.varint();
    const length = await reader.varint();
    if (type !== FrameType.DATA || length === undefined || length > 4096) return "";
    return new TextDecoder().decode(await reader.bytes(length));
  } catch {
    // The refusal stands without its reason text.
    return "";
  }
}
