// A hostile QMux peer on a real WebSocket: the abuses every QMux server must
// survive (ending only that session, with the right code), shared by the
// transport tests and the relay's.
import { TransportCode } from "../../src/transport/mod.ts";
import { encodeFrame, type Frame, streamFrameHeader } from "../../src/transport/mod.ts";
import { decodeMessage } from "../../src/transport/mod.ts";
import { encodeTransportParams } from "../../src/transport/mod.ts";
import { DEFAULT_PARAMS } from "../../src/transport/mod.ts";
import { concatBytes } from "../../src/wire/mod.ts";

export const PROTOCOL = "qmux-02.moq-lite-05";

export interface Outcome {
  /** The CONNECTION_CLOSE the server sent, if any. */
  close?: Extract<Frame, { type: "connection_close" }>;
  /** The WebSocket close code. */
  wsCode: number;
}

/**
 * Opens a WebSocket (trusting `caPem` for wss://), sends our parameters (unless
 * `noParams`), then `send`s the abuse; resolves with what the server answered.
 */
export async function abuse(
  url: URL,
  send: (ws: WebSocket) => void,
  options: { noParams?: boolean; protocol?: string; caPem?: string } = {},
): Promise<Outcome> {
  const protocol = options.protocol ?? PROTOCOL;
  const client = options.caPem ? Deno.createHttpClient({ caCerts: [options.caPem] }) : undefined;
  const ws = new WebSocket(
    url,
    { protocols: [protocol], ...(client ? { client } : {}) } as WebSocketOptions,
  );
  ws.binaryType = "arraybuffer";
  const outcome: Outcome = { wsCode: 0 };
  const format = protocol.startsWith("qmux-00") ? "qmux-00" : "qmux-02";
  ws.onmessage = (e) => {
    try {
      for (const f of decodeMessage(new Uint8Array(e.data as ArrayBuffer), format)) {
        if (f.type === "connection_close") outcome.close = f;
      }
    } catch {
      // not our concern here
    }
  };
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("handshake failed"));
  });
  if (!options.noParams) {
    ws.send(encodeFrame(format, {
      type: "transport_parameters",
      payload: encodeTransportParams(DEFAULT_PARAMS, format),
    }));
  }
  send(ws);
  outcome.wsCode = await new Promise<number>((resolve) => (ws.onclose = (e) => resolve(e.code)));
  client?.close();
  return outcome;
}

/** One STREAM frame (qmux-02) with its payload. */
export function stream(id: number, offset: number, data: Uint8Array, fin = false): Uint8Array {
  return concatBytes([streamFrameHeader("qmux-02", id, offset, data.length, fin), data]);
}

/** One abuse: what is sent, and the CONNECTION_CLOSE code and WebSocket close code it earns. */
export interface HostileCase {
  readonly name: string;
  readonly send: (ws: WebSocket) => void;
  readonly code: number;
  /** Undefined where the peer may see its socket reset before our close frame. */
  readonly wsCode: number | undefined;
  readonly noParams?: boolean;
  /**
   * True when the violation only shows while nothing reads the streams: an
   * application that reads or stops them (as the relay does) lawfully
   * frees their credit first.
   */
  readonly idleApplication?: boolean;
}

/** Every abuse a QMux server must turn into the end of that one session. */
export const HOSTILE_CASES: readonly HostileCase[] = [
  {
    name: "a text message",
    send: (ws) => ws.send("hello"),
    code: TransportCode.PROTOCOL_VIOLATION,
    wsCode: 1003,
  },
  {
    name: "a record over our max_record_size",
    send: (ws) => ws.send(new Uint8Array(DEFAULT_PARAMS.maxRecordSize + 1)),
    code: TransportCode.PROTOCOL_VIOLATION,
    wsCode: 1009,
  },
  {
    name: "an unknown frame type",
    send: (ws) => ws.send(new Uint8Array([0x21, 0x00])),
    code: TransportCode.FRAME_ENCODING_ERROR,
    wsCode: 1002,
  },
  {
    name: "a STREAM frame for a server stream never opened",
    // Index 1000 of the server's bidi streams (id 4001): far beyond any it opened.
    send: (ws) => ws.send(stream(4001, 0, new Uint8Array([1]))),
    code: TransportCode.STREAM_STATE_ERROR,
    wsCode: 1002,
  },
  {
    name: "STOP_SENDING for the client's own uni stream",
    send: (ws) => ws.send(encodeFrame("qmux-02", { type: "stop_sending", id: 2, code: 0 })),
    code: TransportCode.STREAM_STATE_ERROR,
    wsCode: 1002,
  },
  {
    name: "more stream data than the stream window",
    send: (ws) => {
      const chunk = new Uint8Array(16000);
      for (let off = 0; off <= DEFAULT_PARAMS.initialMaxStreamDataBidiRemote; off += chunk.length) {
        ws.send(stream(0, off, chunk));
      }
    },
    code: TransportCode.FLOW_CONTROL_ERROR,
    wsCode: 1002,
    idleApplication: true,
  },
  {
    name: "more data than the connection window",
    send: (ws) => {
      const chunk = new Uint8Array(16000);
      // Eight streams of 160 KB: each within its window, together past 1 MiB.
      for (let s = 0; s < 8; s++) {
        for (let off = 0; off < 160_000; off += chunk.length) ws.send(stream(s * 4, off, chunk));
      }
    },
    code: TransportCode.FLOW_CONTROL_ERROR,
    // The peer is still sending when we close: its socket may see a reset, not our close frame.
    wsCode: undefined,
    idleApplication: true,
  },
  {
    name: "a RESET_STREAM final size past the window",
    send: (ws) =>
      ws.send(
        encodeFrame("qmux-02", { type: "reset_stream", id: 0, code: 1, finalSize: 10_000_000 }),
      ),
    code: TransportCode.FLOW_CONTROL_ERROR,
    wsCode: 1002,
  },
  {
    name: "a flood of stream opens past MAX_STREAMS",
    send: (ws) => {
      for (let i = 0; i <= DEFAULT_PARAMS.initialMaxStreamsUni; i++) {
        ws.send(stream(i * 4 + 2, 0, new Uint8Array([0])));
      }
    },
    code: TransportCode.STREAM_LIMIT_ERROR,
    wsCode: 1002,
  },
  {
    name: "data out of order",
    send: (ws) =>
      ws.send(concatBytes([stream(0, 0, new Uint8Array(4)), stream(0, 10, new Uint8Array(4))])),
    code: TransportCode.PROTOCOL_VIOLATION,
    wsCode: 1002,
  },
  {
    name: "a frame before QX_TRANSPORT_PARAMETERS (qmux-02)",
    send: (ws) => ws.send(stream(0, 0, new Uint8Array([1]))),
    code: TransportCode.PROTOCOL_VIOLATION,
    wsCode: 1002,
    noParams: true,
  },
  {
    name: "a second QX_TRANSPORT_PARAMETERS",
    send: (ws) =>
      ws.send(encodeFrame("qmux-02", {
        type: "transport_parameters",
        payload: encodeTransportParams(DEFAULT_PARAMS, "qmux-02"),
      })),
    code: TransportCode.PROTOCOL_VIOLATION,
    wsCode: 1002,
  },
  {
    name: "a DATAGRAM larger than advertised",
    send: (ws) =>
      ws.send(encodeFrame("qmux-02", {
        type: "datagram",
        data: new Uint8Array(DEFAULT_PARAMS.maxDatagramFrameSize),
        withLength: true,
      })),
    code: TransportCode.PROTOCOL_VIOLATION,
    wsCode: 1002,
  },
  {
    name: "a QX_PING response to a ping never sent",
    send: (ws) => ws.send(encodeFrame("qmux-02", { type: "ping", response: true, sequence: 99n })),
    code: TransportCode.PROTOCOL_VIOLATION,
    wsCode: 1002,
  },
];
