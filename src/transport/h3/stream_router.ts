/**
 * Where each stream and datagram the peer sends on an HTTP/3 connection
 * goes: critical uni streams to the control streams, request streams to the
 * server's handler, WebTransport streams and datagrams to their session.
 * Every incoming stream is read in its own task, so none blocks another. WT
 * streams that arrive before their session's CONNECT was answered wait in a
 * bounded buffer.
 */
import type { ControlStreams } from "./control_stream.ts";
import { H3Code, H3ConnectionError } from "./errors.ts";
import { UniStreamType, WT_BIDI_SIGNAL } from "./frame.ts";
import type { H3Session } from "./session_host.ts";
import { decodeVarint, StreamReader } from "../../wire/mod.ts";

/** Handles a request stream whose first frame type was read (server side). */
export type RequestHandler = (
  stream: Deno.QuicBidirectionalStream,
  reader: StreamReader,
  firstFrameType: number,
) => Promise<void>;

/** What the router needs from its connection. */
export interface StreamRouterHost {
  /** The QUIC connection. */
  readonly conn: Deno.QuicConn;
  /** True once the connection is closing or closed. */
  readonly isClosed: boolean;
  /** Runs a task whose failure must stay contained (an H3ConnectionError closes the connection). */
  spawn(task: Promise<unknown>): void;
}

/** The router's fixed parts. */
export interface StreamRouterOptions {
  /** Which end we are. */
  readonly role: "server" | "client";
  /** WT streams buffered while their session's CONNECT is pending. */
  readonly maxBufferedStreams: number;
  /** The connection's live sessions by id (read, never changed, by the router). */
  readonly sessions: ReadonlyMap<number, H3Session>;
  /** Reads the peer's control and QPACK streams. */
  readonly critical: ControlStreams;
  /** Server: handles request streams. */
  readonly onRequest: RequestHandler | undefined;
}

interface PendingStream {
  readonly sessionId: number;
  /** Positioned after the WT stream header. */
  readonly reader: StreamReader;
  /** The send half, for bidirectional streams. */
  readonly bidi?: Deno.QuicBidirectionalStream;
}

/** Accepts the peer's streams and datagrams and hands each to its reader. */
export class StreamRouter {
  readonly #host: StreamRouterHost;
  readonly #options: StreamRouterOptions;
  #gone = new Set<number>();
  #pending: PendingStream[] = [];

  /** Creates the router; `start()` begins accepting. */
  constructor(host: StreamRouterHost, options: StreamRouterOptions) {
    this.#host = host;
    this.#options = options;
  }

  /** Starts reading the peer's streams and datagrams. */
  start(): void {
    this.#host.spawn(this.#acceptUni());
    this.#host.spawn(this.#acceptBidi());
    this.#host.spawn(this.#readDatagrams());
  }

  /** Delivers the WT streams that arrived early for a session that now exists. */
  release(sessionId: number): void {
    const mine = this.#pending.filter((p) => p.sessionId === sessionId);
    this.#pending = this.#pending.filter((p) => p.sessionId !== sessionId);
    for (const p of mine) this.#route(p);
  }

  /** Marks a session id as never going to exist (refused CONNECT); drops its buffered streams. */
  refuse(sessionId: number): void {
    this.#gone.add(sessionId);
    const mine = this.#pending.filter((p) => p.sessionId === sessionId);
    this.#pending = this.#pending.filter((p) => p.sessionId !== sessionId);
    for (const p of mine) discardPending(p);
  }

  /** Marks a session id as ended: streams that still name it are discarded. */
  ended(sessionId: number): void {
    this.#gone.add(sessionId);
  }

  /** Drops every buffered stream (the connection is gone). */
  discardAll(): void {
    for (const p of this.#pending.splice(0)) discardPending(p);
  }

  async #acceptUni(): Promise<void> {
    const reader = this.#host.conn.incomingUnidirectionalStreams.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        this.#host.spawn(this.#handleUni(value));
      }
    } catch {
      // connection gone
    } finally {
      reader.releaseLock();
    }
  }

  async #acceptBidi(): Promise<void> {
    const reader = this.#host.conn.incomingBidirectionalStreams.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        this.#host.spawn(this.#handleBidi(value));
      }
    } catch {
      // connection gone
    } finally {
      reader.releaseLock();
    }
  }

  async #readDatagrams(): Promise<void> {
    try {
      for (;;) {
        const d = await this.#host.conn.readDatagram();
        const q = decodeVarint(d, 0);
        if (!q) continue;
        const session = this.#options.sessions.get(q.value * 4);
        session?.deliverDatagram(d.subarray(q.length));
      }
    } catch {
      // connection gone
    }
  }

  async #handleUni(stream: Deno.QuicReceiveStream): Promise<void> {
    const r = new StreamReader(stream);
    let type: number | undefined;
    try {
      type = await r.varint("a stream type");
    } catch {
      r.cancel();
      return; // reset or ended inside its type: nothing to do
    }
    if (type === undefined) return;
    switch (type) {
      case UniStreamType.CONTROL:
        return await this.#options.critical.readControl(r);
      case UniStreamType.QPACK_ENCODER:
        return await this.#options.critical.readQpackEncoder(r);
      case UniStreamType.QPACK_DECODER:
        return await this.#options.critical.readQpackDecoder(r);
      case UniStreamType.PUSH:
        r.cancel();
        throw new H3ConnectionError(
          this.#options.role === "server" ? H3Code.STREAM_CREATION_ERROR : H3Code.ID_ERROR,
          "Push stream not allowed",
        );
      case UniStreamType.WEBTRANSPORT: {
        const id = await readSessionId(r);
        if (id === undefined) return;
        return this.#route({ sessionId: id, reader: r });
      }
      default:
        // Unknown or GREASE stream type: stop reading it (RFC 9114 §6.2).
        r.cancel();
    }
  }

  async #handleBidi(stream: Deno.QuicBidirectionalStream): Promise<void> {
    const r = new StreamReader(stream.readable);
    let first: number | undefined;
    try {
      first = await r.varint("a stream header");
    } catch {
      // Reset or ended inside its header: discarded below.
      first = undefined;
    }
    if (first === undefined) {
      r.cancel();
      // Finishing a stream nobody will use is best effort: the peer may be gone.
      stream.writable.close().catch(() => {});
      return;
    }
    if (first === WT_BIDI_SIGNAL) {
      const id = await readSessionId(r);
      if (id === undefined) {
        // Finishing a stream nobody will use is best effort: the peer may be gone.
        stream.writable.close().catch(() => {});
        return;
      }
      return this.#route({ sessionId: id, reader: r, bidi: stream });
    }
    const onRequest = this.#options.onRequest;
    if (this.#options.role === "client" || !onRequest) {
      throw new H3ConnectionError(H3Code.STREAM_CREATION_ERROR, "Server-initiated request stream");
    }
    await onRequest(stream, r, first);
  }

  #route(p: PendingStream): void {
    const session = this.#options.sessions.get(p.sessionId);
    if (session) {
      if (p.bidi) session.deliverBidi(p.bidi, p.reader);
      else session.deliverUni(p.reader);
      return;
    }
    if (this.#gone.has(p.sessionId) || this.#host.isClosed) {
      discardPending(p);
      return;
    }
    // Session ids are client-initiated bidirectional stream ids.
    if (p.sessionId % 4 !== 0) {
      discardPending(p);
      throw new H3ConnectionError(
        H3Code.ID_ERROR,
        `Invalid WebTransport session id ${p.sessionId}`,
      );
    }
    if (this.#pending.length >= this.#options.maxBufferedStreams) {
      discardPending(p); // WT_BUFFERED_STREAM_REJECTED, as far as Deno can signal it
      return;
    }
    this.#pending.push(p);
  }
}

async function readSessionId(r: StreamReader): Promise<number | undefined> {
  try {
    const id = await r.varint("a session id");
    if (id === undefined) r.cancel();
    return id;
  } catch {
    // Reset or ended inside the session id: the stream carries nothing.
    r.cancel();
    return undefined;
  }
}

function discardPending(p: PendingStream): void {
  p.reader.cancel();
  // Finishing a stream nobody will use is best effort: the peer may be gone.
  p.bidi?.writable.close().catch(() => {});
}
