import { formatAddr } from "../address.ts";
import type { SessionCloseInfo } from "../session.ts";
import { ControlStreams } from "./control_stream.ts";
import { H3Code, H3ConnectionError } from "./errors.ts";
import type { Settings } from "./settings.ts";
import type { H3Session, SessionHost } from "./session_host.ts";
import { type RequestHandler, StreamRouter } from "./stream_router.ts";

import { systemTimers, type Timers } from "../../timers/mod.ts";

export type { Timers };

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
  readonly onRequest?: RequestHandler;
}

/**
 * The HTTP/3 connection underneath WebTransport sessions: its lifecycle
 * (session timeout, close grace, shutdown, connection errors) and its table
 * of live sessions. {@linkcode ControlStreams} owns the control and QPACK
 * streams; {@linkcode StreamRouter} hands the peer's streams and datagrams on.
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
  readonly #closeGraceMs: number;
  /** Largest header section accepted (RFC 9114 size). */
  readonly maxFieldSectionSize: number;
  readonly #control: ControlStreams;
  readonly #router: StreamRouter;
  #sessions = new Map<number, H3Session>();
  #tasks = new Set<Promise<unknown>>();
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
    this.#timers = options.timers ?? systemTimers;
    this.maxFieldSectionSize = options.maxFieldSectionSize ?? 16 * 1024;
    this.#closeGraceMs = options.closeGraceMs ?? 2000;
    this.#control = new ControlStreams(options.role, this);
    this.#router = new StreamRouter(this, {
      role: options.role,
      maxBufferedStreams: options.maxBufferedStreams ?? 64,
      sessions: this.#sessions,
      critical: this.#control,
      onRequest: options.onRequest,
    });
    let remote = "";
    try {
      remote = formatAddr(conn.remoteAddr);
    } catch {
      // connection already gone
    }
    this.remote = remote;
    this.peerSettings = this.#control.peerSettings;
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
    this.spawn(this.#control.open(this.conn, this.maxFieldSectionSize));
    this.#router.start();
  }

  /** Runs `task`, keeping its failure contained; `settled()` waits for all of them. */
  spawn(task: Promise<unknown>): void {
    const t = task.catch((err) => {
      if (err instanceof H3ConnectionError) this.fail(err.wireCode, err.message);
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
  addSession(session: H3Session): void {
    this.#sessions.set(session.id, session);
    this.#everHadSession = true;
    if (this.#sessionTimer !== undefined) {
      this.#timers.clearTimeout(this.#sessionTimer);
      this.#sessionTimer = undefined;
    }
    this.#router.release(session.id);
  }

  /** Marks a session id as never going to exist (refused CONNECT); drops its buffered streams. */
  refuseSession(id: number): void {
    this.#router.refuse(id);
  }

  /** Called by a session once it ended; closes the connection when it was the last one. */
  sessionEnded(id: number, peerDone: Promise<void>): void {
    this.#sessions.delete(id);
    this.#router.ended(id);
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
    await this.#control.write(type, payload);
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
    this.#control.connectionClosed();
    const lost: SessionCloseInfo = {
      code: info?.closeCode ?? 0,
      reason: info?.reason ?? "connection lost",
      dropped: true,
    };
    for (const s of [...this.#sessions.values()]) s.connectionLost(lost);
    this.#router.discardAll();
  }
}
