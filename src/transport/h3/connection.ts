import { formatAddr } from "../quic.ts";
import type { SessionCloseInfo } from "../session.ts";
import { H3Code, H3ConnectionError } from "../webtransport/errors.ts";
import {
  encodeFrame,
  FrameType,
  HTTP2_RESERVED_FRAME_TYPES,
  UniStreamType,
  WT_BIDI_SIGNAL,
} from "./frame.ts";
import { decodeSettings, localSettings, type Settings } from "./settings.ts";
import {
  concatBytes,
  DecodeError,
  decodeVarint,
  encodeVarint,
  StreamReader,
} from "../../wire/mod.ts";
import type { SessionHost, WebTransportSession } from "../webtransport/wt_session.ts";

/** Timer functions, injectable for tests. */
export interface Timers {
  /** Schedules `fn` after `ms`. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a scheduled call. */
  clearTimeout(id: unknown): void;
}

/** Default timers (the global ones). */
export const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as number),
};

/** Limits and hooks for one HTTP/3 connection. */
export interface H3ConnectionOptions {
  /** Which end we are. */
  readonly role: "server" | "client";
  /** Largest request/response header section accepted, RFC 9114 size (default 16384). */
  readonly maxFieldSectionSize?: number;
  /** WT streams buffered while their session's CONNECT is pending (default 64). */
  readonly maxBufferedStreams?: number;
  /** Server: close a connection that has no established session after this long (default 10 s). */
  readonly sessionTimeoutMs?: number;
  /** After the last session ended, how long a server waits for the client to close the connection, and a client for the server to finish the CONNECT stream (default 2 s). */
  readonly closeGraceMs?: number;
  /** Timer functions. */
  readonly timers?: Timers;
  /** Server: handles a request stream whose first frame type was read. */
  readonly onRequest?: (
    stream: Deno.QuicBidirectionalStream,
    reader: StreamReader,
    firstFrameType: number,
  ) => Promise<void>;
}

const MAX_CONTROL_FRAME = 16 * 1024;

interface PendingStream {
  readonly sessionId: number;
  /** Positioned after the WT stream header. */
  readonly reader: StreamReader;
  /** The send half, for bidirectional streams. */
  readonly bidi?: Deno.QuicBidirectionalStream;
}

/**
 * The HTTP/3 connection underneath WebTransport sessions: control stream and
 * SETTINGS, QPACK streams, stream-type dispatch (every incoming stream is read
 * in its own task, so none blocks another), datagram routing, WT stream
 * buffering, and connection errors.
 */
export class H3Connection implements SessionHost {
  /** The QUIC connection. */
  readonly conn: Deno.QuicConn;
  /** Resolves with the peer's SETTINGS; rejects if the connection ends first. */
  readonly peerSettings: Promise<Settings>;
  /** Resolves when the QUIC connection is closed (by anyone). */
  readonly closed: Promise<Deno.QuicCloseInfo | undefined>;
  /** The peer's address as host:port. */
  readonly remote: string;

  readonly #role: "server" | "client";
  readonly #timers: Timers;
  readonly #maxBuffered: number;
  readonly #closeGraceMs: number;
  readonly #onRequest: H3ConnectionOptions["onRequest"];
  readonly maxFieldSectionSize: number;
  #resolveSettings!: (s: Settings) => void;
  #rejectSettings!: (e: Error) => void;
  #sessions = new Map<number, WebTransportSession>();
  #gone = new Set<number>();
  #pending: PendingStream[] = [];
  #tasks = new Set<Promise<unknown>>();
  #control: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #seen = new Set<number>();
  #isClosed = false;
  #everHadSession = false;
  #sessionTimer: unknown;
  #closeTimer: unknown;
  /** Why we closed the connection, when we did. */
  closeInfo: { code: number; reason: string } | undefined;

  /** Wraps an established QUIC connection with ALPN h3. Call `start()` next. */
  constructor(conn: Deno.QuicConn, options: H3ConnectionOptions) {
    this.conn = conn;
    this.#role = options.role;
    this.#timers = options.timers ?? realTimers;
    this.maxFieldSectionSize = options.maxFieldSectionSize ?? 16 * 1024;
    this.#maxBuffered = options.maxBufferedStreams ?? 64;
    this.#closeGraceMs = options.closeGraceMs ?? 2000;
    this.#onRequest = options.onRequest;
    let remote = "";
    try {
      remote = formatAddr(conn.remoteAddr);
    } catch {
      // connection already gone
    }
    this.remote = remote;
    this.peerSettings = new Promise((resolve, reject) => {
      this.#resolveSettings = resolve;
      this.#rejectSettings = reject;
    });
    // Waiters see the rejection; this only keeps it from going unhandled when nobody waits.
    this.peerSettings.catch(() => {});
    this.closed = conn.closed.then((i) => i, () => undefined);
    this.spawn(this.closed.then((info) => this.#onClosed(info)));
    if (this.#role === "server") {
      const ms = options.sessionTimeoutMs ?? 10_000;
      this.#sessionTimer = this.#timers.setTimeout(() => {
        this.#sessionTimer = undefined;
        if (!this.#everHadSession) {
          this.fail(H3Code.REQUEST_INCOMPLETE, `No WebTransport session within ${ms} ms`);
        }
      }, ms);
    }
  }

  /** Opens our control stream with SETTINGS and starts reading the peer's streams and datagrams. */
  start(): void {
    this.spawn(this.#openControl());
    this.spawn(this.#acceptUni());
    this.spawn(this.#acceptBidi());
    this.spawn(this.#readDatagrams());
  }

  /** Runs `task`, keeping its failure contained; `settled()` waits for all of them. */
  spawn(task: Promise<unknown>): void {
    const t = task.catch((err) => {
      if (err instanceof H3ConnectionError) this.fail(err.code, err.message);
    });
    this.#tasks.add(t);
    t.finally(() => this.#tasks.delete(t));
  }

  /** Resolves once the connection is closed and every task it ran has finished. */
  async settled(): Promise<void> {
    await this.closed;
    while (this.#tasks.size > 0) await Promise.allSettled([...this.#tasks]);
  }

  /** Closes the connection with an HTTP/3 error code (idempotent). */
  fail(code: number, reason: string): void {
    if (this.#isClosed) return;
    this.#isClosed = true;
    this.closeInfo = { code, reason };
    this.#clearTimers();
    try {
      this.conn.close({ closeCode: code, reason: reason.slice(0, 200) });
    } catch {
      // already closed
    }
  }

  /** Number of live sessions on this connection. */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  /** True once the connection is closing or closed. */
  get isClosed(): boolean {
    return this.#isClosed;
  }

  /** Registers an accepted session and releases the WT streams that arrived early for it. */
  addSession(session: WebTransportSession): void {
    this.#sessions.set(session.id, session);
    this.#everHadSession = true;
    if (this.#sessionTimer !== undefined) {
      this.#timers.clearTimeout(this.#sessionTimer);
      this.#sessionTimer = undefined;
    }
    const mine = this.#pending.filter((p) => p.sessionId === session.id);
    this.#pending = this.#pending.filter((p) => p.sessionId !== session.id);
    for (const p of mine) this.#route(p);
  }

  /** Marks a session id as never going to exist (refused CONNECT); drops its buffered streams. */
  refuseSession(id: number): void {
    this.#gone.add(id);
    const mine = this.#pending.filter((p) => p.sessionId === id);
    this.#pending = this.#pending.filter((p) => p.sessionId !== id);
    for (const p of mine) discardPending(p);
  }

  /** Called by a session once it ended; closes the connection when it was the last one. */
  sessionEnded(id: number, peerDone: Promise<void>): void {
    this.#sessions.delete(id);
    this.#gone.add(id);
    if (this.#sessions.size > 0 || this.#isClosed) return;
    // Give the close capsule time to reach the peer before closing the connection.
    if (this.#closeTimer !== undefined) this.#timers.clearTimeout(this.#closeTimer);
    this.#closeTimer = this.#timers.setTimeout(() => {
      this.#closeTimer = undefined;
      if (this.#sessions.size === 0) this.fail(H3Code.NO_ERROR, "");
    }, this.#closeGraceMs);
    // A client owns its connection and closes it once the server finished the CONNECT
    // stream. A server leaves that to the client: closing right away can overtake the
    // close capsule in a browser (Chromium then reports "Connection lost").
    if (this.#role === "client") {
      this.spawn(peerDone.then(() => {
        if (this.#sessions.size === 0) this.fail(H3Code.NO_ERROR, "");
      }));
    }
  }

  /**
   * Ends every session with a close capsule (code 0, `reason`), then closes
   * the connection once the peer finished (or after the close grace period);
   * resolves when everything is cleaned up.
   */
  async shutdown(reason: string): Promise<void> {
    if (this.#sessions.size === 0) this.fail(H3Code.NO_ERROR, reason);
    for (const s of [...this.#sessions.values()]) s.close(0, reason);
    await this.settled();
  }

  /** Writes a frame on our control stream (e.g. GOAWAY). */
  async writeControl(type: number, payload: Uint8Array): Promise<void> {
    await this.#control?.write(encodeFrame(type, payload));
  }

  #clearTimers(): void {
    if (this.#sessionTimer !== undefined) this.#timers.clearTimeout(this.#sessionTimer);
    if (this.#closeTimer !== undefined) this.#timers.clearTimeout(this.#closeTimer);
    this.#sessionTimer = undefined;
    this.#closeTimer = undefined;
  }

  #onClosed(info: Deno.QuicCloseInfo | undefined): void {
    this.#isClosed = true;
    this.#clearTimers();
    this.#rejectSettings(new Error("Connection closed before SETTINGS"));
    const lost: SessionCloseInfo = {
      code: info?.closeCode ?? 0,
      reason: info?.reason ?? "connection lost",
      dropped: true,
    };
    for (const s of [...this.#sessions.values()]) s.connectionLost(lost);
    for (const p of this.#pending.splice(0)) discardPending(p);
  }

  async #openControl(): Promise<void> {
    const s = await this.conn.createUnidirectionalStream({ sendOrder: 1 << 30 });
    const w = s.getWriter();
    this.#control = w;
    const settings = localSettings(this.#role, this.maxFieldSectionSize);
    await w.write(
      concatBytes([encodeVarint(UniStreamType.CONTROL), encodeFrame(FrameType.SETTINGS, settings)]),
    );
    // Never closed: closing a control stream is a connection error for the peer.
  }

  async #acceptUni(): Promise<void> {
    const reader = this.conn.incomingUnidirectionalStreams.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        this.spawn(this.#handleUni(value));
      }
    } catch {
      // connection gone
    } finally {
      reader.releaseLock();
    }
  }

  async #acceptBidi(): Promise<void> {
    const reader = this.conn.incomingBidirectionalStreams.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        this.spawn(this.#handleBidi(value));
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
        const d = await this.conn.readDatagram();
        const q = decodeVarint(d, 0);
        if (!q) continue;
        const session = this.#sessions.get(q.value * 4);
        session?.deliverDatagram(d.subarray(q.length));
      }
    } catch {
      // connection gone
    }
  }

  async #handleUni(stream: Deno.QuicReceiveStream): Promise<void> {
    const r = new StreamReader(stream.getReader());
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
        this.#claimCritical(type, "control");
        return await this.#readControl(r);
      case UniStreamType.QPACK_ENCODER:
        this.#claimCritical(type, "QPACK encoder");
        return await this.#readQpackEncoder(r);
      case UniStreamType.QPACK_DECODER:
        this.#claimCritical(type, "QPACK decoder");
        return await this.#drainCritical(r, "QPACK decoder");
      case UniStreamType.PUSH:
        r.cancel();
        throw new H3ConnectionError(
          this.#role === "server" ? H3Code.STREAM_CREATION_ERROR : H3Code.ID_ERROR,
          "Push stream not allowed",
        );
      case UniStreamType.WEBTRANSPORT: {
        const id = await this.#readSessionId(r);
        if (id === undefined) return;
        return this.#route({ sessionId: id, reader: r });
      }
      default:
        // Unknown or GREASE stream type: stop reading it (RFC 9114 §6.2).
        r.cancel();
    }
  }

  #claimCritical(type: number, name: string): void {
    if (this.#seen.has(type)) {
      throw new H3ConnectionError(H3Code.STREAM_CREATION_ERROR, `Second ${name} stream`);
    }
    this.#seen.add(type);
  }

  async #readSessionId(r: StreamReader): Promise<number | undefined> {
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

  async #readControl(r: StreamReader): Promise<void> {
    let first = true;
    try {
      for (;;) {
        const type = await r.varint("a control frame");
        if (type === undefined) {
          throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "Control stream closed");
        }
        const length = await r.varint("a control frame");
        if (length === undefined) {
          throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "Control stream closed");
        }
        if (first) {
          first = false;
          if (type !== FrameType.SETTINGS) {
            throw new H3ConnectionError(
              H3Code.MISSING_SETTINGS,
              "First control frame is not SETTINGS",
            );
          }
          if (length > MAX_CONTROL_FRAME) {
            throw new H3ConnectionError(H3Code.EXCESSIVE_LOAD, `SETTINGS frame of ${length} bytes`);
          }
          this.#resolveSettings(decodeSettings(await r.bytes(length, "SETTINGS")));
          continue;
        }
        if (
          type === FrameType.SETTINGS || type === FrameType.DATA || type === FrameType.HEADERS ||
          type === FrameType.PUSH_PROMISE || HTTP2_RESERVED_FRAME_TYPES.has(type) ||
          (type === FrameType.MAX_PUSH_ID && this.#role === "client")
        ) {
          throw new H3ConnectionError(
            H3Code.FRAME_UNEXPECTED,
            `Frame 0x${type.toString(16)} on the control stream`,
          );
        }
        if (length > MAX_CONTROL_FRAME) {
          await r.skip(length, "a control frame");
        } else {
          await r.bytes(length, "a control frame"); // GOAWAY, CANCEL_PUSH, MAX_PUSH_ID, unknown: nothing to act on
        }
      }
    } catch (err) {
      if (err instanceof H3ConnectionError) throw err;
      if (err instanceof DecodeError && err.kind === "truncated") {
        throw new H3ConnectionError(
          H3Code.CLOSED_CRITICAL_STREAM,
          "Control stream closed mid-frame",
        );
      }
      if (this.#isClosed) return;
      throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "Control stream reset");
    }
  }

  async #readQpackEncoder(r: StreamReader): Promise<void> {
    try {
      for (;;) {
        const b = await r.u8();
        if (b === undefined) {
          throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "QPACK encoder stream closed");
        }
        // Only "Set Dynamic Table Capacity 0" is acceptable: we advertised capacity 0.
        if ((b & 0xe0) !== 0x20 || (b & 0x1f) !== 0) {
          throw new H3ConnectionError(
            H3Code.QPACK_ENCODER_STREAM_ERROR,
            `QPACK encoder instruction 0x${b.toString(16)} with a zero-capacity table`,
          );
        }
      }
    } catch (err) {
      if (err instanceof H3ConnectionError) throw err;
      if (this.#isClosed) return;
      throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "QPACK encoder stream reset");
    }
  }

  async #drainCritical(r: StreamReader, name: string): Promise<void> {
    try {
      while ((await r.chunk(4096)) !== undefined) {
        /* nothing to act on without a dynamic table */
      }
    } catch {
      // A reset after the connection closed is expected; otherwise reported below.
      if (this.#isClosed) return;
    }
    if (!this.#isClosed) {
      throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, `${name} stream closed`);
    }
  }

  async #handleBidi(stream: Deno.QuicBidirectionalStream): Promise<void> {
    const r = new StreamReader(stream.readable.getReader());
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
      const id = await this.#readSessionId(r);
      if (id === undefined) {
        // Finishing a stream nobody will use is best effort: the peer may be gone.
        stream.writable.close().catch(() => {});
        return;
      }
      return this.#route({ sessionId: id, reader: r, bidi: stream });
    }
    if (this.#role === "client" || !this.#onRequest) {
      throw new H3ConnectionError(H3Code.STREAM_CREATION_ERROR, "Server-initiated request stream");
    }
    await this.#onRequest(stream, r, first);
  }

  #route(p: PendingStream): void {
    const session = this.#sessions.get(p.sessionId);
    if (session) {
      if (p.bidi) session.deliverBidi(p.bidi, p.reader);
      else session.deliverUni(p.reader);
      return;
    }
    if (this.#gone.has(p.sessionId) || this.#isClosed) {
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
    if (this.#pending.length >= this.#maxBuffered) {
      discardPending(p); // WT_BUFFERED_STREAM_REJECTED, as far as Deno can signal it
      return;
    }
    this.#pending.push(p);
  }
}

function discardPending(p: PendingStream): void {
  p.reader.cancel();
  // Finishing a stream nobody will use is best effort: the peer may be gone.
  p.bidi?.writable.close().catch(() => {});
}

/** Frame types that may never appear on a request stream. */
export function isForbiddenOnRequestStream(type: number): boolean {
  return type === FrameType.SETTINGS || type === FrameType.GOAWAY ||
    type === FrameType.MAX_PUSH_ID ||
    type === FrameType.CANCEL_PUSH || HTTP2_RESERVED_FRAME_TYPES.has(type);
}
