/**
 * sluice's own WebSocket client (RFC 6455) for QMux, on a TCP connection it
 * owns. Deno's WebSocket client leaves Nagle's algorithm on and reports no
 * HTTP status when a `wss://` handshake is refused; this one sets
 * TCP_NODELAY before TLS (so our small records are not held back waiting
 * for the peer's delayed ACKs), says which status refused it, and writes
 * one message at a time (`bufferedAmount` is what waits in its queue).
 */
import { errorText } from "../../error_text/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import { concatBytes } from "../../wire/mod.ts";
import { QMuxConnectError } from "./errors.ts";
import type { MessageSocket, SocketEvents } from "./socket.ts";
import {
  closePayload,
  encodeClientFrame,
  Opcode,
  parseClose,
  parseServerFrame,
  WsProtocolError,
} from "./ws_frame.ts";

/** Options of {@linkcode openWebSocket}. */
export interface OpenWebSocketOptions {
  /** Sec-WebSocket-Protocol offers, preferred first. */
  readonly protocols: readonly string[];
  /** Extra PEM roots to trust (wss). */
  readonly caCerts?: readonly string[];
  /** TLS server name and Host when dialing an address (default the URL's host). */
  readonly serverName?: string;
  /** Extra request headers (e.g. origin). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Largest message accepted from the server (default 1 MiB; larger closes with 1009). */
  readonly maxMessage?: number;
  /** Timers of the closing handshake's wait for the server (default the global ones). */
  readonly timers?: Timers;
}

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const MAX_HEAD = 16 * 1024;

/** Opens a WebSocket to a `ws:` or `wss:` URL; resolves once the server answered 101. */
export async function openWebSocket(
  url: URL,
  options: OpenWebSocketOptions,
): Promise<{ socket: MessageSocket; protocol: string }> {
  const { conn, protocol, rest } = await openRawWebSocket(url, options);
  const maxMessage = options.maxMessage ?? 1 << 20;
  const socket = new ClientSocket(conn, rest, maxMessage, options.timers ?? systemTimers);
  return { socket, protocol };
}

/** A WebSocket whose handshake is done, left to its owner to frame by hand. */
export interface RawWebSocket {
  /** The TCP (or TLS) connection. */
  readonly conn: Deno.Conn;
  /** The subprotocol the server chose ("" for none). */
  readonly protocol: string;
  /** Bytes the server sent after its handshake answer (the start of its first frames). */
  readonly rest: Uint8Array;
}

/**
 * Dials and completes the WebSocket handshake, handing over the bare
 * connection: for peers that frame by hand with `ws_frame.ts` (the network
 * fuzzer's broken ones). Refusals throw {@linkcode QMuxConnectError}.
 */
export async function openRawWebSocket(
  url: URL,
  options: OpenWebSocketOptions,
): Promise<RawWebSocket> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || (url.protocol === "wss:" ? 443 : 80));
  const tcp = await Deno.connect({ hostname: host, port });
  tcp.setNoDelay(true);
  let conn: Deno.Conn = tcp;
  try {
    if (url.protocol === "wss:") {
      conn = await Deno.startTls(tcp, {
        hostname: options.serverName ?? host,
        alpnProtocols: ["http/1.1"],
        ...(options.caCerts ? { caCerts: [...options.caCerts] } : {}),
      });
    }
    const { protocol, rest } = await handshake(conn, url, options);
    return { conn, protocol, rest };
  } catch (err) {
    try {
      conn.close();
    } catch {
      // already closed
    }
    throw err;
  }
}

async function handshake(
  conn: Deno.Conn,
  url: URL,
  options: OpenWebSocketOptions,
): Promise<{ protocol: string; rest: Uint8Array }> {
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const lines = [
    `GET ${url.pathname || "/"}${url.search} HTTP/1.1`,
    `Host: ${options.serverName === undefined ? url.host : hostWithPort(options.serverName, url)}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    `Sec-WebSocket-Key: ${key}`,
    "Sec-WebSocket-Version: 13",
    `Sec-WebSocket-Protocol: ${options.protocols.join(", ")}`,
    ...Object.entries(options.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
  ];
  await writeAll(conn, new TextEncoder().encode(`${lines.join("\r\n")}\r\n\r\n`));
  let buf: Uint8Array = new Uint8Array(0);
  let end = -1;
  while (end < 0) {
    const chunk = new Uint8Array(4096);
    const n = await conn.read(chunk);
    if (n === null) throw new QMuxConnectError("The server closed during the WebSocket handshake");
    buf = concatBytes([buf, chunk.subarray(0, n)]);
    end = headEnd(buf);
    if (end < 0 && buf.length > MAX_HEAD) {
      throw new QMuxConnectError("The server's handshake answer is too long");
    }
  }
  const head = new TextDecoder().decode(buf.subarray(0, end));
  const [statusLine = "", ...headerLines] = head.split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? NaN);
  const headers = new Map<string, string>();
  for (const line of headerLines) {
    const i = line.indexOf(":");
    if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  if (status !== 101) {
    const body = new TextDecoder().decode(buf.subarray(end + 4)).slice(0, 300);
    const detail = /"detail"\s*:\s*"([^"]*)"/.exec(body)?.[1] ?? statusLine;
    throw new QMuxConnectError(`Refused with ${status}: ${detail}`, status);
  }
  const expected = await acceptKey(key);
  if (headers.get("sec-websocket-accept") !== expected) {
    throw new QMuxConnectError("The server's Sec-WebSocket-Accept does not match");
  }
  const protocol = headers.get("sec-websocket-protocol") ?? "";
  return { protocol, rest: buf.subarray(end + 4) };
}

/** `name` with the URL's port when it has one (IPv6 names in brackets). */
function hostWithPort(name: string, url: URL): string {
  const host = name.includes(":") ? `[${name}]` : name;
  return url.port === "" ? host : `${host}:${url.port}`;
}

function headEnd(buf: Uint8Array): number {
  for (let i = 0; i + 3 < buf.length; i++) {
    if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) return i;
  }
  return -1;
}

async function acceptKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(key + GUID));
  return btoa(String.fromCharCode(...new Uint8Array(digest)));
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

/** The open client connection: a read loop delivering messages, a serial write queue. */
class ClientSocket implements MessageSocket {
  readonly #conn: Deno.Conn;
  readonly #maxMessage: number;
  readonly #timers: Timers;
  #pending: Uint8Array;
  #queue: Uint8Array[] = [];
  #queued = 0;
  #writing = false;
  #closing = false;
  #ended = false;
  #closeTimer: unknown;
  #events: SocketEvents | undefined;

  constructor(conn: Deno.Conn, initial: Uint8Array, maxMessage: number, timers: Timers) {
    this.#conn = conn;
    this.#timers = timers;
    this.#pending = initial.slice();
    this.#maxMessage = maxMessage;
  }

  get open(): boolean {
    return !this.#closing && !this.#ended;
  }

  get bufferedAmount(): number {
    return this.#queued;
  }

  listen(events: SocketEvents): void {
    this.#events = events;
    queueMicrotask(() => events.open());
    void this.#readLoop();
  }

  send(message: Uint8Array): void {
    if (!this.open) return;
    this.#enqueue(encodeClientFrame(Opcode.BINARY, message));
  }

  close(code: number, reason: string): void {
    if (this.#closing || this.#ended) return;
    this.#closing = true;
    this.#enqueue(encodeClientFrame(Opcode.CLOSE, closePayload(code, reason)));
    // The server answers with its own close frame; do not wait for it forever.
    this.#closeTimer = this.#timers.setTimeout(() => this.#end(code, reason), 1000);
  }

  #enqueue(frame: Uint8Array): void {
    this.#queue.push(frame);
    this.#queued += frame.length;
    if (!this.#writing) void this.#writeLoop();
  }

  async #writeLoop(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#queue.length > 0) {
        const frames = this.#queue.splice(0);
        const bytes = frames.length === 1 ? frames[0]! : concatBytes(frames);
        await writeAll(this.#conn, bytes);
        this.#queued -= bytes.length;
      }
    } catch (err) {
      this.#queue = [];
      this.#end(1006, errorText(err));
    } finally {
      this.#writing = false;
      // An ended socket closes once what it had to say (its close frame) is written.
      if (this.#ended) this.#closeConn();
    }
  }

  #closeConn(): void {
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
  }

  async #readLoop(): Promise<void> {
    const chunk = new Uint8Array(64 * 1024);
    let fragments: Uint8Array[] = [];
    let fragmentBytes = 0;
    let fragmentOpcode = 0;
    try {
      for (;;) {
        let parsed;
        while ((parsed = parseServerFrame(this.#pending, this.#maxMessage))) {
          const { frame, size } = parsed;
          const payload = frame.payload.slice();
          this.#pending = this.#pending.subarray(size);
          if (frame.opcode === Opcode.PING) {
            this.#enqueue(encodeClientFrame(Opcode.PONG, payload));
          } else if (frame.opcode === Opcode.CLOSE) {
            const { code, reason } = parseClose(payload);
            if (!this.#closing) {
              this.#closing = true;
              this.#enqueue(encodeClientFrame(Opcode.CLOSE, payload.subarray(0, 2)));
            }
            return this.#end(code, reason);
          } else if (frame.opcode !== Opcode.PONG) {
            if (frame.opcode !== Opcode.CONTINUATION) fragmentOpcode = frame.opcode;
            fragments.push(payload);
            fragmentBytes += payload.length;
            if (fragmentBytes > this.#maxMessage) {
              throw new WsProtocolError(1009, `Message of more than ${this.#maxMessage} bytes`);
            }
            if (frame.fin) {
              const message = fragments.length === 1 ? fragments[0]! : concatBytes(fragments);
              fragments = [];
              fragmentBytes = 0;
              this.#events?.message(
                fragmentOpcode === Opcode.TEXT ? new TextDecoder().decode(message) : message,
              );
            }
          }
        }
        const n = await this.#conn.read(chunk);
        if (n === null) return this.#end(1006, "The connection closed");
        this.#pending = this.#pending.length === 0
          ? chunk.slice(0, n)
          : concatBytes([this.#pending, chunk.subarray(0, n)]);
      }
    } catch (err) {
      if (err instanceof WsProtocolError) {
        this.#enqueue(encodeClientFrame(Opcode.CLOSE, closePayload(err.wireCode, err.message)));
        this.#closing = true;
        return this.#end(err.wireCode, err.message);
      }
      this.#end(1006, errorText(err));
    }
  }

  #end(code: number, reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#closeTimer !== undefined) this.#timers.clearTimeout(this.#closeTimer);
    if (!this.#writing) this.#closeConn();
    this.#events?.close(code, reason);
  }
}
