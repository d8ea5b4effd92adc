/**
 * The two sides of the contract between an HTTP/3 connection and the
 * sessions it carries. They live here, below both, so HTTP/3 never imports
 * WebTransport: the connection implements {@linkcode SessionHost}, a
 * WebTransport session implements {@linkcode H3Session}.
 */
import type { SessionCloseInfo } from "../session.ts";
import type { StreamReader } from "../../wire/mod.ts";

/** What a session may ask of the HTTP/3 connection that carries it. */
export interface SessionHost {
  /** The QUIC connection. */
  readonly conn: Deno.QuicConn;
  /** Closes the whole connection with an HTTP/3 error. */
  fail(code: number, reason: string): void;
  /** Tells the connection the session ended; `peerDone` resolves when the peer finished the CONNECT stream. */
  sessionEnded(id: number, peerDone: Promise<void>): void;
  /** Runs a task whose failure must stay contained. */
  spawn(task: Promise<unknown>): void;
}

/** What the HTTP/3 connection asks of a session it carries. */
export interface H3Session {
  /** Session id: the CONNECT stream's id. */
  readonly id: number;
  /** Ends the session with `code` and `reason` (the connection is shutting down). */
  close(code: number, reason: string): void;
  /** Ends the session because the connection is gone. */
  connectionLost(info: SessionCloseInfo): void;
  /** Takes a peer-opened bidirectional stream whose header `reader` consumed. */
  deliverBidi(stream: Deno.QuicBidirectionalStream, reader: StreamReader): void;
  /** Takes a peer-opened unidirectional stream whose header `reader` consumed. */
  deliverUni(reader: StreamReader): void;
  /** Takes a datagram payload (after the quarter stream id). */
  deliverDatagram(payload: Uint8Array): void;
}
