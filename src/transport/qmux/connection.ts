/**
 * The state of one QMux connection, independent of the WebSocket: stream
 * tables, flow control in both directions and the send scheduler. Frames
 * from the peer are applied by `receive.ts`; the public `Session` is
 * `session.ts`.
 */
import type { Timers } from "../../timers/mod.ts";
import type { SessionClosedError } from "../errors.ts";
import { RecvWindow, SendCredit, StreamCountLimit } from "./credit.ts";
import { type ControlFrame, encodeFrame, MAX_STREAM_PAYLOAD, streamFrameHeader } from "./frame.ts";
import { MIN_RECORD_SIZE, NO_PARAMS, type TransportParams } from "./params.ts";
import { type MessageSink, SendScheduler } from "./scheduler.ts";
import { kindOf, OpenedStreams, streamId, type StreamKind } from "./stream_ids.ts";
import { RecvHalf, SendHalf, type StreamHost } from "./streams.ts";
import { hasFlowControl, usesRecords, type WireFormat } from "./subprotocol.ts";

/** A stream handed to the application: a send half, a receive half, or both. */
export interface StreamPair {
  /** Our sending half (absent for a peer's uni stream). */
  readonly send?: SendHalf;
  /** Our receiving half (absent for our uni stream). */
  readonly recv?: RecvHalf;
}

/** Tuning of a connection. */
export interface ConnectionOptions {
  /** How frames are put on the wire. */
  readonly format: WireFormat;
  /** Which end of the WebSocket we are. */
  readonly role: "client" | "server";
  /** Our transport parameters. */
  readonly params: TransportParams;
  /** Socket bytes in flight above which sending waits. */
  readonly highWater: number;
  /** Stream bytes that may wait in the scheduler with their writes already resolved. */
  readonly queueBudget: number;
  /** Control bytes allowed to wait for a peer that does not read. */
  readonly maxControlBytes: number;
  /** Without flow control (legacy format): bytes we buffer for the application before giving up. */
  readonly legacyBufferLimit: number;
  /** Without flow control: peer streams open at once before giving up. */
  readonly legacyStreamLimit: number;
  /** The peer opened a stream. */
  readonly onStream: (pair: StreamPair, uni: boolean) => void;
  /** Control frames piled up: the peer does not read. */
  readonly onOverflow: () => void;
  /** A message was sent. */
  readonly onSent: () => void;
  /** Timers of the send scheduler's back-off (default the system's). */
  readonly timers?: Timers;
}

/** One QMux connection's streams and flow control. */
export class QMuxConnection implements StreamHost {
  /** The wire format. */
  readonly format: WireFormat;
  /** True on the side that accepted the WebSocket. */
  readonly isServer: boolean;
  /** Our parameters. */
  readonly ours: TransportParams;
  /** The peer's parameters (no credit until they arrive). */
  peer: TransportParams = NO_PARAMS;
  /** True once the peer's QX_TRANSPORT_PARAMETERS arrived. */
  paramsReceived = false;
  /** True when the format has flow control (every QMux draft). */
  readonly flow: boolean;
  /** The send scheduler. */
  readonly scheduler: SendScheduler;
  /** Connection credit the peer granted. */
  readonly connSend: SendCredit;
  /** Connection window we grant. */
  readonly connRecv: RecvWindow;
  /** Bidi streams we may open (cumulative). */
  readonly bidiOpen: SendCredit;
  /** Uni streams we may open (cumulative). */
  readonly uniOpen: SendCredit;
  /** Peer bidi streams allowed. */
  readonly peerBidi: StreamCountLimit;
  /** Peer uni streams allowed. */
  readonly peerUni: StreamCountLimit;
  /** Peer bidi stream indexes seen. */
  readonly openedBidi: OpenedStreams = new OpenedStreams();
  /** Peer uni stream indexes seen. */
  readonly openedUni: OpenedStreams = new OpenedStreams();
  /** Live send halves by id. */
  readonly sending: Map<number, SendHalf> = new Map();
  /** Live receive halves by id. */
  readonly receiving: Map<number, RecvHalf> = new Map();
  /** Next index of our bidi and uni streams. */
  readonly next: { bidi: number; uni: number } = { bidi: 0, uni: 0 };
  /** Set once the session ended. */
  closed: SessionClosedError | undefined;
  readonly #o: ConnectionOptions;

  /** Sets up a connection that sends into `sink`. */
  constructor(sink: MessageSink, options: ConnectionOptions) {
    this.#o = options;
    this.format = options.format;
    this.isServer = options.role === "server";
    this.ours = options.params;
    this.flow = hasFlowControl(options.format);
    const unlimited = this.flow ? 0 : Infinity;
    this.connSend = new SendCredit(unlimited);
    this.bidiOpen = new SendCredit(unlimited);
    this.uniOpen = new SendCredit(unlimited);
    this.connRecv = new RecvWindow(
      this.flow ? this.ours.initialMaxData : options.legacyBufferLimit,
    );
    this.peerBidi = new StreamCountLimit(
      this.flow ? this.ours.initialMaxStreamsBidi : options.legacyStreamLimit,
    );
    this.peerUni = new StreamCountLimit(
      this.flow ? this.ours.initialMaxStreamsUni : options.legacyStreamLimit,
    );
    this.scheduler = new SendScheduler(sink, MIN_RECORD_SIZE, {
      records: usesRecords(options.format),
      highWater: options.highWater,
      queueBudget: options.queueBudget,
      maxControlBytes: options.maxControlBytes,
      maxDatagrams: 64,
      onOverflow: options.onOverflow,
      onSent: options.onSent,
      ...(options.timers ? { timers: options.timers } : {}),
    });
  }

  /** Queues a control frame. */
  control(frame: ControlFrame): void {
    this.scheduler.control(encodeFrame(this.format, frame));
  }

  /** Applies the peer's parameters: credits for the connection, stream counts and open streams. */
  applyPeerParams(params: TransportParams): void {
    this.peer = params;
    this.paramsReceived = true;
    this.scheduler.maxMessage = Math.min(params.maxRecordSize, 65_536);
    this.connSend.raise(params.initialMaxData);
    this.bidiOpen.raise(params.initialMaxStreamsBidi);
    this.uniOpen.raise(params.initialMaxStreamsUni);
    for (const half of this.sending.values()) half.credit.raise(this.#sendWindow(half.id));
  }

  /** The stream window the peer grants on one of our send halves. */
  #sendWindow(id: number): number {
    if (!this.flow) return Infinity;
    const kind = kindOf(id);
    if (kind.uni) return this.peer.initialMaxStreamDataUni;
    return this.isLocal(kind)
      ? this.peer.initialMaxStreamDataBidiRemote
      : this.peer.initialMaxStreamDataBidiLocal;
  }

  /** The stream window we grant on one of our receive halves. */
  #recvWindow(id: number): number {
    if (!this.flow) return Infinity;
    const kind = kindOf(id);
    if (kind.uni) return this.ours.initialMaxStreamDataUni;
    return this.isLocal(kind)
      ? this.ours.initialMaxStreamDataBidiLocal
      : this.ours.initialMaxStreamDataBidiRemote;
  }

  /** True for streams we open. */
  isLocal(kind: StreamKind): boolean {
    return kind.server === this.isServer;
  }

  /** Opens a stream of ours once the peer's stream limit allows; its halves are registered. */
  async open(uni: boolean, order: number): Promise<StreamPair> {
    const count = uni ? this.uniOpen : this.bidiOpen;
    while (count.available < 1) {
      if (this.closed) throw this.closed;
      if (this.flow) this.control({ type: "streams_blocked", bidi: !uni, limit: count.max });
      await count.wait();
    }
    if (this.closed) throw this.closed;
    count.take(1);
    const index = uni ? this.next.uni++ : this.next.bidi++;
    const id = streamId(index, { uni, server: this.isServer });
    const send = this.#sendHalf(id, order);
    return uni ? { send } : { send, recv: this.#recvHalf(id) };
  }

  /** Registers a stream the peer opened and hands it to the application. */
  acceptPeerStream(id: number): RecvHalf {
    const uni = kindOf(id).uni;
    const recv = this.#recvHalf(id);
    this.#o.onStream(uni ? { recv } : { send: this.#sendHalf(id, 0), recv }, uni);
    return recv;
  }

  #sendHalf(id: number, order: number): SendHalf {
    const credit = new SendCredit(this.paramsReceived || !this.flow ? this.#sendWindow(id) : 0);
    const half = new SendHalf(id, credit, this.scheduler.lane(order), this, MAX_STREAM_PAYLOAD);
    this.sending.set(id, half);
    return half;
  }

  #recvHalf(id: number): RecvHalf {
    const half = new RecvHalf(id, new RecvWindow(this.#recvWindow(id)), this);
    this.receiving.set(id, half);
    return half;
  }

  /** The application accepted a peer stream: it may now count as done. */
  markAccepted(half: RecvHalf): void {
    if (half.accepted) return;
    half.accepted = true;
    if (half.ended) this.#release(half.id);
  }

  #release(id: number): void {
    const uni = kindOf(id).uni;
    const max = (uni ? this.peerUni : this.peerBidi).release();
    if (max !== undefined && this.flow) this.control({ type: "max_streams", bidi: !uni, max });
  }

  /** Counts connection bytes consumed (delivered or dropped), advertising MAX_DATA when due. */
  consumeConnection(n: number): void {
    if (n === 0) return;
    const max = this.connRecv.consume(n);
    if (max !== undefined && this.flow) this.control({ type: "max_data", max });
  }

  // StreamHost

  /** Waits for stream and connection credit; spends up to `want`. */
  async claim(half: SendHalf, want: number): Promise<number> {
    for (;;) {
      if (half.failure !== undefined) throw half.failure;
      if (this.closed) throw this.closed;
      const n = Math.min(want, half.credit.available, this.connSend.available);
      if (n > 0) {
        half.credit.take(n);
        this.connSend.take(n);
        return n;
      }
      if (half.credit.available === 0) {
        this.control({ type: "stream_data_blocked", id: half.id, limit: half.credit.max });
        await half.credit.wait();
      } else {
        this.control({ type: "data_blocked", limit: this.connSend.max });
        await this.connSend.wait();
      }
    }
  }

  /** Queues a STREAM frame for bytes already paid for. */
  send(half: SendHalf, data: Uint8Array, fin: boolean): Promise<void> {
    const header = streamFrameHeader(this.format, half.id, half.offset, data.length, fin);
    half.offset += data.length;
    if (fin) this.sending.delete(half.id);
    return this.scheduler.stream(half.lane, header, data);
  }

  /** Drops what the half still has queued and sends RESET_STREAM. */
  reset(half: SendHalf, code: number): void {
    this.sending.delete(half.id);
    if (this.closed) return;
    this.scheduler.drop(half.lane, new Error("Stream aborted"));
    this.control({ type: "reset_stream", id: half.id, code, finalSize: half.offset });
  }

  /** Credit for bytes the application took from a receive half. */
  consumed(half: RecvHalf, n: number): void {
    if (this.flow && !half.ended) {
      const max = half.window.consume(n);
      if (max !== undefined) this.control({ type: "max_stream_data", id: half.id, max });
    }
    this.consumeConnection(n);
  }

  /** Asks the peer to stop sending on a receive half. */
  stopSending(half: RecvHalf, code: number): void {
    if (!this.closed) this.control({ type: "stop_sending", id: half.id, code });
  }

  /** A receive half ended: forget it; a finished peer stream makes room for another. */
  recvEnded(half: RecvHalf): void {
    this.receiving.delete(half.id);
    if (!this.isLocal(kindOf(half.id)) && half.accepted) this.#release(half.id);
  }

  /** Ends everything: writes and reads fail with `err`, nothing more is sent. */
  teardown(err: SessionClosedError): void {
    if (this.closed) return;
    this.closed = err;
    for (const half of this.sending.values()) half.fail(err);
    for (const half of this.receiving.values()) half.fail(err);
    this.sending.clear();
    this.receiving.clear();
    for (const credit of [this.connSend, this.bidiOpen, this.uniOpen]) credit.wake();
    this.scheduler.close(err);
  }
}
