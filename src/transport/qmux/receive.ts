/**
 * Applying the peer's frames to a {@linkcode QMuxConnection}. Anything that
 * breaks the protocol throws {@linkcode QMuxProtocolError}; the session
 * then ends with CONNECTION_CLOSE carrying its code.
 */
import { varintSize } from "../../wire/mod.ts";
import { StreamError } from "../errors.ts";
import type { QMuxConnection } from "./connection.ts";
import { QMuxProtocolError, TransportCode } from "./errors.ts";
import type { Frame } from "./frame.ts";
import { decodeTransportParams } from "./params.ts";
import { indexOf, kindOf } from "./stream_ids.ts";
import type { RecvHalf } from "./streams.ts";

/** What the session does with frames that concern it rather than a stream. */
export interface SessionEvents {
  /** The peer closed: APPLICATION_CLOSE (`error` false) or CONNECTION_CLOSE. */
  peerClosed(code: number, reason: string, error: boolean): void;
  /** A datagram arrived. */
  datagram(data: Uint8Array): void;
  /** A QX_PING request arrived: answer it. */
  pinged(sequence: bigint): void;
  /** A QX_PING response arrived. */
  ponged(sequence: bigint): void;
}

function violation(code: number, message: string): QMuxProtocolError {
  return new QMuxProtocolError(code, message);
}

/** Applies one frame. */
export function applyFrame(conn: QMuxConnection, frame: Frame, events: SessionEvents): void {
  if (conn.format === "qmux-02" && !conn.paramsReceived && frame.type !== "transport_parameters") {
    throw violation(TransportCode.PROTOCOL_VIOLATION, "QX_TRANSPORT_PARAMETERS must come first");
  }
  switch (frame.type) {
    case "stream":
      return onStream(conn, frame);
    case "reset_stream":
      return onReset(conn, frame);
    case "stop_sending":
      return onStopSending(conn, frame.id, frame.code);
    case "max_data":
      return conn.connSend.raise(frame.max);
    case "max_stream_data":
      if (sendableStream(conn, frame.id, "MAX_STREAM_DATA")) {
        conn.sending.get(frame.id)?.credit.raise(frame.max);
      }
      return;
    case "max_streams":
      return (frame.bidi ? conn.bidiOpen : conn.uniOpen).raise(frame.max);
    case "data_blocked":
    case "stream_data_blocked":
    case "streams_blocked":
      return; // informational
    case "connection_close":
      return events.peerClosed(frame.code, frame.reason, true);
    case "application_close":
      return events.peerClosed(frame.code, frame.reason, false);
    case "datagram":
      return onDatagram(conn, frame.data, frame.withLength, events);
    case "transport_parameters":
      if (!conn.flow || conn.paramsReceived) {
        throw violation(TransportCode.PROTOCOL_VIOLATION, "Unexpected QX_TRANSPORT_PARAMETERS");
      }
      return conn.applyPeerParams(decodeTransportParams(frame.payload, conn.format));
    case "ping":
      return frame.response ? events.ponged(frame.sequence) : events.pinged(frame.sequence);
  }
}

/**
 * Checks that a frame about sending on `id` names a stream we can send on:
 * not the peer's uni stream, not one of ours we never opened. Returns false
 * for a peer stream we have not seen (nothing to do yet).
 */
function sendableStream(conn: QMuxConnection, id: number, what: string): boolean {
  const kind = kindOf(id);
  if (!conn.isLocal(kind)) {
    if (kind.uni) {
      throw violation(TransportCode.STREAM_STATE_ERROR, `${what} for receive-only stream ${id}`);
    }
    return true;
  }
  if (indexOf(id) >= (kind.uni ? conn.next.uni : conn.next.bidi)) {
    throw violation(TransportCode.STREAM_STATE_ERROR, `${what} for stream ${id} never opened`);
  }
  return true;
}

/**
 * The live receive half for a frame about `id`, opening a peer stream on
 * first sight; undefined when the stream already finished (late frames).
 */
function receiveHalf(conn: QMuxConnection, id: number, what: string): RecvHalf | undefined {
  const kind = kindOf(id);
  if (conn.isLocal(kind)) {
    if (kind.uni) {
      throw violation(TransportCode.STREAM_STATE_ERROR, `${what} on send-only stream ${id}`);
    }
    if (indexOf(id) >= conn.next.bidi) {
      throw violation(TransportCode.STREAM_STATE_ERROR, `${what} on stream ${id} never opened`);
    }
    return conn.receiving.get(id);
  }
  const live = conn.receiving.get(id);
  if (live) return live;
  const index = indexOf(id);
  const opened = kind.uni ? conn.openedUni : conn.openedBidi;
  if (opened.classify(index) === "finished") return undefined;
  if (!(kind.uni ? conn.peerUni : conn.peerBidi).allows(index)) {
    throw violation(TransportCode.STREAM_LIMIT_ERROR, `Stream ${id} exceeds the stream limit`);
  }
  opened.open(index);
  return conn.acceptPeerStream(id);
}

/** Counts bytes against the connection window; beyond it is a flow-control violation. */
function receiveConnection(conn: QMuxConnection, n: number): void {
  if (!conn.connRecv.receive(n)) {
    throw violation(
      TransportCode.FLOW_CONTROL_ERROR,
      `Connection data ${conn.connRecv.received} exceeds the limit ${conn.connRecv.limit}`,
    );
  }
}

function onStream(conn: QMuxConnection, f: Extract<Frame, { type: "stream" }>): void {
  const half = receiveHalf(conn, f.id, "STREAM");
  if (!half) {
    // A finished stream's late bytes still used the peer's credit: count them consumed.
    receiveConnection(conn, f.data.length);
    conn.consumeConnection(f.data.length);
    return;
  }
  if (f.offset !== undefined && f.offset !== half.window.received) {
    throw violation(
      TransportCode.PROTOCOL_VIOLATION,
      `STREAM ${f.id} at offset ${f.offset}, expected ${half.window.received} (data must be in order)`,
    );
  }
  if (!half.window.receive(f.data.length)) {
    throw violation(
      TransportCode.FLOW_CONTROL_ERROR,
      `Stream ${f.id} data ${half.window.received} exceeds the limit ${half.window.limit}`,
    );
  }
  receiveConnection(conn, f.data.length);
  if (f.data.length > 0) conn.consumeConnection(half.push(f.data));
  if (f.fin) half.finish();
}

function onReset(conn: QMuxConnection, f: Extract<Frame, { type: "reset_stream" }>): void {
  if (f.reliableSize !== undefined && !conn.ours.resetStreamAt) {
    throw violation(TransportCode.PROTOCOL_VIOLATION, "RESET_STREAM_AT was not negotiated");
  }
  const half = receiveHalf(conn, f.id, "RESET_STREAM");
  if (!half) return;
  // Bytes the peer sent but we never saw still count against both windows.
  const gap = Math.max(0, (f.finalSize ?? 0) - half.window.received);
  if (!half.window.receive(gap)) {
    throw violation(
      TransportCode.FLOW_CONTROL_ERROR,
      `Stream ${f.id} final size exceeds its limit`,
    );
  }
  receiveConnection(conn, gap);
  conn.consumeConnection(gap + half.reset(f.code));
}

function onStopSending(conn: QMuxConnection, id: number, code: number): void {
  if (!sendableStream(conn, id, "STOP_SENDING")) return;
  const half = conn.sending.get(id);
  if (!half) return; // already finished or reset
  const err = new StreamError("stopped", code, `Stream stopped by peer with code ${code}`);
  half.fail(err);
  conn.sending.delete(id);
  conn.scheduler.drop(half.lane, err);
  // RFC 9000 §3.5: answer STOP_SENDING with RESET_STREAM carrying the same code.
  conn.control({ type: "reset_stream", id, code, finalSize: half.offset });
}

function onDatagram(
  conn: QMuxConnection,
  data: Uint8Array,
  withLength: boolean,
  events: SessionEvents,
): void {
  const max = conn.ours.maxDatagramFrameSize;
  if (max === 0 || conn.format === "qmux-00" || !conn.flow) {
    throw violation(TransportCode.PROTOCOL_VIOLATION, "DATAGRAM frames were not negotiated");
  }
  const frameSize = 1 + (withLength ? varintSize(data.length) : 0) + data.length;
  if (frameSize > max) {
    throw violation(
      TransportCode.PROTOCOL_VIOLATION,
      `DATAGRAM frame of ${frameSize} bytes exceeds ${max}`,
    );
  }
  events.datagram(data);
}
