/**
 * A QMux session over one WebSocket, for either end, behind the
 * transport-neutral {@linkcode Session}: the socket's messages become
 * frames for the connection, the connection's scheduler feeds the socket,
 * and the session's life (transport parameters, keep-alive, close both
 * ways) is handled here.
 */
import { errorText } from "../../error_text/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import { DropOldestQueue, varintSize } from "../../wire/mod.ts";
import { SessionClosedError } from "../errors.ts";
import type {
  BidiStream,
  RecvStream,
  SendStream,
  Session,
  SessionCloseInfo,
  StreamOptions,
} from "../session.ts";
import { type ConnectionOptions, QMuxConnection, type StreamPair } from "./connection.ts";
import { QMuxProtocolError, TransportCode, WebSocketCode } from "./errors.ts";
import { encodeFrame } from "./frame.ts";
import { decodeMessage } from "./frame_decode.ts";
import { effectiveIdleTimeout, KeepAlive } from "./keepalive.ts";
import { encodeTransportParams, type TransportParams } from "./params.ts";
import { applyFrame, type SessionEvents } from "./receive.ts";
import { type MessageSocket, webSocketSocket } from "./socket.ts";
import { parseSubprotocol, usesRecords, type WireFormat } from "./subprotocol.ts";
import { PingSequence } from "./ping_sequence.ts";
import { maxMessageSize, type QMuxSessionOptions, sessionParams } from "./session_options.ts";
import { bidiHandle, sendHandle } from "./stream_handles.ts";

/** A QMux session over a WebSocket. */
export class QMuxSession implements Session {
  /** Always "websocket". */
  readonly transport = "websocket" as const;
  /** The application protocol of the negotiated subprotocol (e.g. "moq-lite-05"). */
  readonly protocol: string;
  /** The wire format of the negotiated subprotocol. */
  readonly format: WireFormat;
  /** The URL the client dialed. */
  readonly url: URL | undefined;
  /** The peer's address. */
  readonly remote: string;
  /** Resolves when the session ends (never rejects). */
  readonly closed: Promise<SessionCloseInfo>;
  /**
   * Resolves true once the peer's first message was accepted (its transport
   * parameters, in every QMux draft), false when the session ended first.
   */
  readonly established: Promise<boolean>;
  readonly #socket: MessageSocket;
  readonly #conn: QMuxConnection;
  readonly #bidi = new DropOldestQueue<StreamPair>();
  readonly #uni = new DropOldestQueue<StreamPair>();
  readonly #datagrams = new DropOldestQueue<Uint8Array>(256);
  readonly #now: () => number;
  #keepAlive: KeepAlive | undefined;
  #resolveClosed!: (info: SessionCloseInfo) => void;
  #resolveEstablished!: (established: boolean) => void;
  #isEstablished = false;
  #setupTimer: unknown;
  readonly #timers: Timers;
  #done = false;
  #opened = false;
  #paramsFrame: Uint8Array | undefined;
  #pendingEnd: (() => void) | undefined;
  readonly #events: SessionEvents;
  readonly #pings: PingSequence;

  /**
   * Runs QMux on `socket` (open, or still opening on a server before its
   * upgrade response went out); a Deno WebSocket is adapted.
   */
  constructor(socket: MessageSocket | WebSocket, options: QMuxSessionOptions) {
    if (!("listen" in socket)) socket = webSocketSocket(socket);
    this.#socket = socket;
    this.#now = options.now ?? Date.now;
    const negotiated = parseSubprotocol(options.subprotocol);
    this.format = negotiated.format;
    this.protocol = negotiated.protocol;
    this.url = options.url;
    this.remote = options.remote;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.established = new Promise((resolve) => (this.#resolveEstablished = resolve));
    this.#timers = options.timers ?? systemTimers;
    this.#pings = new PingSequence(this.format === "qmux-02");
    const params = sessionParams(options.params, this.format);
    this.#conn = new QMuxConnection(socket, this.#connectionOptions(options, params));
    this.#events = {
      peerClosed: (code, reason, error) => this.#peerClosed(code, reason, error),
      datagram: (data) => this.#datagrams.push(data),
      pinged: (seq) => this.#pinged(seq),
      ponged: (seq) => this.#pings.answered(seq),
    };
    this.#listen(socket);
    if (options.setupTimeoutMs !== undefined) this.#armSetupTimer(options.setupTimeoutMs);
    if (this.#conn.flow) {
      this.#paramsFrame = encodeFrame(this.format, {
        type: "transport_parameters",
        payload: encodeTransportParams(params, this.format),
      });
      this.#conn.scheduler.control(this.#paramsFrame);
    }
  }

  #connectionOptions(options: QMuxSessionOptions, params: TransportParams): ConnectionOptions {
    return {
      format: this.format,
      role: options.role,
      params,
      highWater: options.highWater ?? 256 * 1024,
      queueBudget: 64 * 1024,
      maxControlBytes: 1 << 20,
      legacyBufferLimit: 4 << 20,
      legacyStreamLimit: 1000,
      onStream: (pair, uni) => (uni ? this.#uni : this.#bidi).push(pair),
      onOverflow: () =>
        this.#drop("The peer does not read what we send", WebSocketCode.POLICY_VIOLATION),
      onSent: () => this.#keepAlive?.sent(),
      timers: this.#timers,
    };
  }

  #listen(socket: MessageSocket): void {
    socket.listen({
      open: () => {
        this.#opened = true;
        const end = this.#pendingEnd;
        this.#pendingEnd = undefined;
        if (end) end();
        else this.#conn.scheduler.kick();
      },
      message: (data) => this.#onMessage(data),
      close: (code, reason) => {
        this.#finish({ code, reason: reason || "The WebSocket closed", dropped: true });
      },
    });
  }

  #armSetupTimer(ms: number): void {
    this.#setupTimer = this.#timers.setTimeout(() => {
      this.#setupTimer = undefined;
      this.#drop(`No transport parameters within ${ms} ms`, WebSocketCode.POLICY_VIOLATION);
    }, ms);
  }

  /** The peer's transport parameters, once they arrived. */
  get peerParams(): TransportParams | undefined {
    return this.#conn.paramsReceived ? this.#conn.peer : undefined;
  }

  /** Opens a bidirectional stream (waits while the peer's stream limit is reached). */
  async openBidi(options?: StreamOptions): Promise<BidiStream> {
    this.#assertOpen();
    return bidiHandle(await this.#conn.open(false, options?.sendOrder ?? 0));
  }

  /** Opens a unidirectional stream (waits while the peer's stream limit is reached). */
  async openUni(options?: StreamOptions): Promise<SendStream> {
    this.#assertOpen();
    return sendHandle(await this.#conn.open(true, options?.sendOrder ?? 0));
  }

  /** The next stream the peer opened; undefined once the session ended. */
  async acceptBidi(): Promise<BidiStream | undefined> {
    const pair = await this.#bidi.next();
    if (!pair) return undefined;
    this.#conn.markAccepted(pair.recv!);
    return bidiHandle(pair);
  }

  /** The next uni stream the peer opened; undefined once the session ended. */
  async acceptUni(): Promise<RecvStream | undefined> {
    const pair = await this.#uni.next();
    if (!pair) return undefined;
    this.#conn.markAccepted(pair.recv!);
    return { readable: pair.recv!.readable };
  }

  /** Largest datagram payload the peer accepts now (0 without datagram support). */
  get maxDatagramSize(): number {
    const peer = this.#conn.peer;
    if (this.#done || !usesRecords(this.format) || peer.maxDatagramFrameSize === 0) return 0;
    const cap = Math.min(peer.maxDatagramFrameSize, peer.maxRecordSize);
    return Math.max(0, cap - 1 - varintSize(cap));
  }

  /** Sends a datagram (best effort: dropped when too many wait); RangeError when too large. */
  sendDatagram(data: Uint8Array): Promise<void> {
    this.#assertOpen();
    const max = this.maxDatagramSize;
    if (data.length > max) {
      throw new RangeError(`Cannot send a datagram of ${data.length} bytes: at most ${max} fit`);
    }
    this.#conn.scheduler.datagram(
      encodeFrame(this.format, { type: "datagram", data, withLength: true }),
    );
    return Promise.resolve();
  }

  /** The next datagram; undefined once the session ended. The oldest are dropped when 256 wait. */
  readDatagram(): Promise<Uint8Array | undefined> {
    return this.#datagrams.next();
  }

  /** QMux stream errors are already the neutral ones. */
  translateError(err: unknown): unknown {
    return err;
  }

  /** Sends APPLICATION_CLOSE with `code` and `reason`, then closes the WebSocket. Idempotent. */
  close(code = 0, reason = ""): void {
    if (this.#done) return;
    const frame = encodeFrame(this.format, { type: "application_close", code, reason });
    this.#finish({ code, reason });
    this.#endSocket(frame, WebSocketCode.NORMAL, "");
  }

  #assertOpen(): void {
    if (this.#done) throw new SessionClosedError("QMux session is closed");
  }

  #onMessage(data: Uint8Array | string): void {
    if (this.#done) return;
    this.#keepAlive?.received();
    try {
      if (typeof data === "string") {
        throw new QMuxProtocolError(
          TransportCode.PROTOCOL_VIOLATION,
          "Text messages are not allowed in QMux",
          WebSocketCode.UNSUPPORTED_DATA,
        );
      }
      const message = data;
      this.#checkSize(message.length);
      const hadParams = this.#conn.paramsReceived;
      for (const frame of decodeMessage(message, this.format)) {
        if (this.#done) return;
        applyFrame(this.#conn, frame, this.#events);
      }
      if (!hadParams && this.#conn.paramsReceived) this.#startKeepAlive();
      if (!this.#isEstablished && (this.#conn.paramsReceived || !this.#conn.flow)) {
        this.#isEstablished = true;
        this.#clearSetupTimer();
        this.#resolveEstablished(true);
      }
    } catch (err) {
      if (err instanceof QMuxProtocolError) return this.#fail(err);
      this.#fail(
        new QMuxProtocolError(TransportCode.INTERNAL_ERROR, `Internal error: ${errorText(err)}`),
      );
    }
  }

  #checkSize(size: number): void {
    const max = maxMessageSize(this.format, this.#conn.ours.maxRecordSize);
    if (size > max) {
      throw new QMuxProtocolError(
        TransportCode.PROTOCOL_VIOLATION,
        `Message of ${size} bytes exceeds ${max}`,
        WebSocketCode.MESSAGE_TOO_BIG,
      );
    }
  }

  #clearSetupTimer(): void {
    if (this.#setupTimer !== undefined) this.#timers.clearTimeout(this.#setupTimer);
    this.#setupTimer = undefined;
  }

  #startKeepAlive(): void {
    if (!usesRecords(this.format)) return; // qmux-00 and legacy: WebSocket ping/pong only
    const timeout = effectiveIdleTimeout(
      this.#conn.ours.maxIdleTimeout,
      this.#conn.peer.maxIdleTimeout,
    );
    if (timeout === 0) return;
    this.#keepAlive = new KeepAlive(
      timeout,
      this.#now,
      () => this.#conn.control({ type: "ping", response: false, sequence: this.#pings.next() }),
      () => this.#drop(`No frame from the peer for ${timeout} ms`, WebSocketCode.NORMAL),
      this.#timers,
    );
  }

  #pinged(seq: bigint): void {
    this.#pings.asked(seq);
    this.#conn.control({ type: "ping", response: true, sequence: seq });
  }

  #peerClosed(code: number, reason: string, error: boolean): void {
    this.#finish({ code, reason: error ? `Peer closed with transport error: ${reason}` : reason });
    this.#endSocket(undefined, WebSocketCode.NORMAL, "");
  }

  /** We caught the peer breaking the protocol: CONNECTION_CLOSE, then the WebSocket close. */
  #fail(err: QMuxProtocolError): void {
    if (this.#done) return;
    const frame = encodeFrame(this.format, {
      type: "connection_close",
      code: err.wireCode,
      frameType: 0,
      reason: err.message,
    });
    this.#finish({ code: err.wireCode, reason: err.message });
    this.#endSocket(frame, err.wsCode, err.message);
  }

  /** The session ends without a close frame (peer gone or not reading). */
  #drop(reason: string, wsCode: number): void {
    this.#finish({ code: 0, reason, dropped: true });
    this.#endSocket(undefined, wsCode, reason);
  }

  /**
   * Sends the final close frame (when there is one) ahead of everything
   * queued, then closes the WebSocket. A server socket whose upgrade
   * response has not gone out yet does both once it opens, so a session
   * closed at once still tells the peer why.
   */
  #endSocket(frame: Uint8Array | undefined, code: number, reason: string): void {
    if (!this.#socket.open && !this.#opened) {
      this.#pendingEnd = () => this.#endSocket(frame, code, reason);
      return;
    }
    try {
      const scheduler = this.#conn.scheduler;
      // Our parameters come first on the wire, even when the session ends before they went out.
      if (frame && this.#paramsFrame && !scheduler.sentAny) scheduler.sendNow(this.#paramsFrame);
      if (frame) scheduler.sendNow(frame);
    } catch {
      // the socket is already gone
    }
    // Close reasons are limited to 123 bytes (RFC 6455 §5.5).
    this.#socket.close(
      code,
      new TextDecoder().decode(new TextEncoder().encode(reason).subarray(0, 120)),
    );
  }

  #finish(info: SessionCloseInfo): void {
    if (this.#done) return;
    this.#done = true;
    this.#keepAlive?.stop();
    this.#clearSetupTimer();
    this.#resolveEstablished(false);
    this.#conn.teardown(
      new SessionClosedError(`QMux session closed: ${info.code} ${info.reason}`.trim()),
    );
    this.#bidi.close();
    this.#uni.close();
    this.#datagrams.close();
    this.#resolveClosed(info);
  }
}
