import type {
  BidiStream,
  RecvStream,
  SendStream,
  Session,
  SessionCloseInfo,
  StreamOptions,
} from "../session.ts";
import { DropOldestQueue, encodeVarint, type StreamReader } from "../../wire/mod.ts";
import { recvStream } from "./recv_stream.ts";
import { type Capsule, CapsuleParser, encodeCloseCapsule } from "./capsule.ts";
import { SessionClosedError } from "../errors.ts";
import { H3Code, H3ConnectionError } from "../h3/mod.ts";
import { fromWebTransportStreamError } from "./stream_error.ts";
import type { H3Session, SessionHost } from "../h3/mod.ts";
import { encodeFrame, FrameType, HTTP2_RESERVED_FRAME_TYPES, wtStreamHeader } from "../h3/mod.ts";

const MAX_BUFFERED_DATAGRAMS = 256;

/**
 * One WebTransport session over HTTP/3: the CONNECT stream carries capsules;
 * WT streams after their header bytes are handed to the application through
 * a byte stream that reads straight into the application's buffers (see
 * {@linkcode recvStream}); datagrams carry the quarter stream id.
 */
export class WebTransportSession implements Session, H3Session {
  /** Always "webtransport". */
  readonly transport = "webtransport" as const;
  /** Negotiated WT-Protocol (or the documented default when none was negotiated). */
  readonly protocol: string;
  /** The CONNECT URL. */
  readonly url: URL | undefined;
  /** The peer's address. */
  readonly remote: string;
  /** Session id: the CONNECT stream's id. */
  readonly id: number;
  /** Resolves when the session ends. */
  readonly closed: Promise<SessionCloseInfo>;
  /** Resolves when the peer asked to drain (DRAIN_WEBTRANSPORT_SESSION). */
  readonly draining: Promise<void>;

  #host: SessionHost;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #reader: StreamReader;
  #bidi = new DropOldestQueue<BidiStream>();
  #uni = new DropOldestQueue<RecvStream>();
  #datagrams = new DropOldestQueue<Uint8Array>(MAX_BUFFERED_DATAGRAMS);
  #datagramPrefix: Uint8Array;
  #resolveClosed!: (info: SessionCloseInfo) => void;
  #resolveDrain!: () => void;
  #done = false;
  #readLoop: Promise<void>;

  /** Created by the server or client once the CONNECT got a 2xx. */
  constructor(init: {
    host: SessionHost;
    id: number;
    writer: WritableStreamDefaultWriter<Uint8Array>;
    reader: StreamReader;
    protocol: string;
    url: URL | undefined;
    remote: string;
  }) {
    this.#host = init.host;
    this.id = init.id;
    this.#writer = init.writer;
    this.#reader = init.reader;
    this.protocol = init.protocol;
    this.url = init.url;
    this.remote = init.remote;
    this.#datagramPrefix = encodeVarint(init.id / 4);
    this.closed = new Promise((r) => (this.#resolveClosed = r));
    this.draining = new Promise((r) => (this.#resolveDrain = r));
    this.#readLoop = this.#readConnectStream();
    init.host.spawn(this.#readLoop);
  }

  /** Opens a bidirectional WT stream. */
  async openBidi(options?: StreamOptions): Promise<BidiStream> {
    this.#assertOpen();
    let s: Deno.QuicBidirectionalStream;
    try {
      s = await this.#host.conn.createBidirectionalStream({
        sendOrder: options?.sendOrder ?? 0,
        waitUntilAvailable: true,
      });
      await writeHeader(s.writable, wtStreamHeader("bidi", this.id));
    } catch (err) {
      throw fromWebTransportStreamError(err);
    }
    return {
      readable: recvStream(s.readable.getReader({ mode: "byob" })),
      writable: s.writable,
      setSendOrder: (o) => void (s.writable.sendOrder = o),
    };
  }

  /** Opens a unidirectional WT stream. */
  async openUni(options?: StreamOptions): Promise<SendStream> {
    this.#assertOpen();
    let s: Deno.QuicSendStream;
    try {
      s = await this.#host.conn.createUnidirectionalStream({
        sendOrder: options?.sendOrder ?? 0,
        waitUntilAvailable: true,
      });
      await writeHeader(s, wtStreamHeader("uni", this.id));
    } catch (err) {
      throw fromWebTransportStreamError(err);
    }
    return { writable: s, setSendOrder: (o) => void (s.sendOrder = o) };
  }

  /** Translates a WT stream's Deno error into a neutral one, with WebTransport codes. */
  translateError(err: unknown): unknown {
    return fromWebTransportStreamError(err);
  }

  /** Next peer-opened bidirectional stream, undefined once the session ended. */
  acceptBidi(): Promise<BidiStream | undefined> {
    return this.#bidi.next();
  }

  /** Next peer-opened unidirectional stream, undefined once the session ended. */
  acceptUni(): Promise<RecvStream | undefined> {
    return this.#uni.next();
  }

  /** Largest datagram payload the application may send now (0 when impossible). */
  get maxDatagramSize(): number {
    if (this.#done) return 0;
    try {
      return Math.max(0, this.#host.conn.maxDatagramSize - this.#datagramPrefix.length);
    } catch {
      return 0; // connection gone
    }
  }

  /** Sends a datagram (best effort; rejects when too large). */
  async sendDatagram(data: Uint8Array): Promise<void> {
    this.#assertOpen();
    const out = new Uint8Array(this.#datagramPrefix.length + data.length);
    out.set(this.#datagramPrefix);
    out.set(data, this.#datagramPrefix.length);
    await this.#host.conn.sendDatagram(out);
  }

  /** Next datagram, undefined once the session ended. Old datagrams are dropped when 256 wait unread. */
  readDatagram(): Promise<Uint8Array | undefined> {
    return this.#datagrams.next();
  }

  /** Sends CLOSE_WEBTRANSPORT_SESSION with `code` and `reason`, then FIN. Idempotent. */
  close(code = 0, reason = ""): void {
    if (this.#done) return;
    this.#finish({ code, reason });
    const capsule = encodeCloseCapsule(code, reason);
    this.#host.spawn(
      (async () => {
        await this.#writer.write(encodeFrame(FrameType.DATA, capsule));
        await this.#writer.close();
        // The session is over either way; a peer that is gone cannot read the capsule.
      })().catch(() => {}),
    );
  }

  /** Delivers a peer-opened WT stream whose header `reader` consumed (called by the connection). */
  deliverBidi(stream: Deno.QuicBidirectionalStream, reader: StreamReader): void {
    const ok = this.#bidi.push({
      readable: recvStream(reader.reader, reader.takeBuffered()),
      writable: stream.writable,
      setSendOrder: (o) => void (stream.writable.sendOrder = o),
    });
    if (!ok) {
      reader.cancel();
      // The session is gone; finishing the unwanted stream is best effort.
      stream.writable.close().catch(() => {});
    }
  }

  /** Delivers a peer-opened WT uni stream whose header `reader` consumed (called by the connection). */
  deliverUni(reader: StreamReader): void {
    if (!this.#uni.push({ readable: recvStream(reader.reader, reader.takeBuffered()) })) {
      reader.cancel();
    }
  }

  /** Delivers a datagram payload (called by the connection). */
  deliverDatagram(payload: Uint8Array): void {
    this.#datagrams.push(payload);
  }

  /** Ends the session because the connection is gone. */
  connectionLost(info: SessionCloseInfo): void {
    this.#finish(info);
  }

  #assertOpen(): void {
    if (this.#done) throw new SessionClosedError("WebTransport session is closed");
  }

  #finish(info: SessionCloseInfo): void {
    if (this.#done) return;
    this.#done = true;
    for (const s of this.#bidi.close()) discardBidi(s);
    // Streams nobody accepted: cancelling them is best effort.
    for (const s of this.#uni.close()) s.readable.cancel().catch(() => {});
    this.#datagrams.close();
    this.#resolveClosed(info);
    // The read loop handles its own failures; the host only waits for its end.
    this.#host.sessionEnded(this.id, this.#readLoop.catch(() => {}));
  }

  #onCapsule(capsule: Capsule): void {
    if (capsule.type === "drain") {
      this.#resolveDrain();
    } else if (!this.#done) {
      this.#finish({ code: capsule.code, reason: capsule.reason });
      // Our side of the CONNECT stream ends either way; the peer may be gone.
      this.#writer.close().catch(() => {});
    }
  }

  async #readConnectStream(): Promise<void> {
    const r = this.#reader;
    const capsules = new CapsuleParser();
    try {
      for (;;) {
        const type = await r.varint("a frame");
        if (type === undefined) break;
        const length = await r.varint("a frame");
        if (length === undefined) {
          throw new H3ConnectionError(H3Code.FRAME_ERROR, "Truncated frame");
        }
        if (type === FrameType.DATA) {
          let left = length;
          while (left > 0) {
            const chunk = await r.chunk(left);
            if (!chunk) throw new H3ConnectionError(H3Code.FRAME_ERROR, "Truncated DATA frame");
            left -= chunk.length;
            for (const capsule of capsules.push(chunk)) this.#onCapsule(capsule);
          }
        } else if (
          type === FrameType.HEADERS || type === FrameType.SETTINGS || type === FrameType.GOAWAY ||
          type === FrameType.MAX_PUSH_ID || type === FrameType.CANCEL_PUSH ||
          type === FrameType.PUSH_PROMISE || HTTP2_RESERVED_FRAME_TYPES.has(type)
        ) {
          throw new H3ConnectionError(
            H3Code.FRAME_UNEXPECTED,
            `Frame 0x${type.toString(16)} on a WebTransport CONNECT stream`,
          );
        } else {
          await r.skip(length);
        }
      }
      // FIN without a capsule: clean close with code 0.
      this.#finish({ code: 0, reason: "" });
      // Our side of the CONNECT stream ends either way; the peer may be gone.
      this.#writer.close().catch(() => {});
    } catch (err) {
      if (err instanceof H3ConnectionError) {
        this.#host.fail(err.wireCode, err.message);
        this.#finish({ code: 0, reason: err.message, dropped: true });
      } else {
        this.#finish({ code: 0, reason: "", dropped: true });
      }
    }
  }
}

async function writeHeader(w: WritableStream<Uint8Array>, header: Uint8Array): Promise<void> {
  const writer = w.getWriter();
  try {
    await writer.write(header);
  } finally {
    writer.releaseLock();
  }
}

/** Ends a stream nobody will read: cancel the receive half, finish the send half. */
export function discardBidi(s: { readable: ReadableStream; writable: WritableStream }): void {
  // Best effort on both halves: the stream may already be gone.
  s.readable.cancel().catch(() => {});
  s.writable.close().catch(() => {});
}
