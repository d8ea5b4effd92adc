/**
 * A hostile peer on a raw WebSocket against our QMux server: each abuse ends
 * that session with CONNECTION_CLOSE carrying the right QUIC transport error
 * code and a WebSocket close, while the server keeps serving others.
 */
import assert from "node:assert/strict";
import { TransportCode } from "../../src/transport/qmux/errors.ts";
import { encodeFrame, type Frame, streamFrameHeader } from "../../src/transport/qmux/frame.ts";
import { decodeMessage } from "../../src/transport/qmux/frame_decode.ts";
import { encodeTransportParams } from "../../src/transport/qmux/params.ts";
import { connectQMux, DEFAULT_PARAMS, type QMuxSession } from "../../src/transport/qmux/mod.ts";
import { concatBytes } from "../../src/wire/mod.ts";
import { rawWebSocket, serveQMux } from "../support/qmux.ts";
import { until } from "../support/wait.ts";

const PROTOCOL = "qmux-02.moq-lite-05";

interface Outcome {
  /** The CONNECTION_CLOSE the server sent, if any. */
  close?: Extract<Frame, { type: "connection_close" }>;
  /** The WebSocket close code. */
  wsCode: number;
}

/** Opens a raw WebSocket, sends our parameters (unless `noParams`), then `abuse`. */
async function abuse(
  url: URL,
  send: (ws: WebSocket) => void,
  options: { noParams?: boolean; protocol?: string } = {},
): Promise<Outcome> {
  const protocol = options.protocol ?? PROTOCOL;
  const ws = new WebSocket(url, [protocol]);
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
  return outcome;
}

function stream(id: number, offset: number, data: Uint8Array, fin = false): Uint8Array {
  return concatBytes([streamFrameHeader("qmux-02", id, offset, data.length, fin), data]);
}

/** The server, and a check that it still serves a well-behaved client. */
async function server() {
  const sessions: QMuxSession[] = [];
  const srv = await serveQMux((s) => sessions.push(s));
  return {
    url: srv.url,
    sessions,
    async stillServes(): Promise<void> {
      const ok = await connectQMux(srv.url, { protocols: ["moq-lite-05"] });
      const s = await ok.openBidi();
      const w = s.writable.getWriter();
      await w.write(new Uint8Array([1, 2, 3]));
      await w.close();
      const theirs = (await sessions.at(-1)!.acceptBidi())!;
      assert.deepEqual(
        new Uint8Array(await new Response(theirs.readable).arrayBuffer()),
        new Uint8Array([1, 2, 3]),
      );
      ok.close(0, "");
    },
    stop: () => srv.stop(),
  };
}

const cases: {
  name: string;
  send: (ws: WebSocket) => void;
  code: number;
  wsCode: number | undefined;
  noParams?: boolean;
}[] = [
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
    send: (ws) => ws.send(stream(1, 0, new Uint8Array([1]))),
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

for (const c of cases) {
  Deno.test(`hostile peer: ${c.name} ends only its session`, async () => {
    const srv = await server();
    const outcome = await abuse(srv.url, c.send, c.noParams ? { noParams: true } : {});
    assert.equal(outcome.close?.code, c.code, `CONNECTION_CLOSE: ${outcome.close?.reason}`);
    if (c.wsCode !== undefined) assert.equal(outcome.wsCode, c.wsCode);
    const info = await srv.sessions[0]!.closed;
    assert.equal(info.code, c.code);
    await srv.stillServes();
    await srv.stop();
  });
}

Deno.test("hostile peer: DATAGRAM on qmux-00 (not negotiated) is a violation", async () => {
  const srv = await server();
  const outcome = await abuse(
    srv.url,
    (ws) => ws.send(new Uint8Array([0x31, 0x01, 0x00])),
    { protocol: "qmux-00.moq-lite-05" },
  );
  assert.equal(outcome.close?.code, TransportCode.PROTOCOL_VIOLATION);
  await srv.stillServes();
  await srv.stop();
});

Deno.test("a peer that stops reading while provoking answers is cut off, bounded", async () => {
  const srv = await server();
  // A raw TCP client completes the handshake, then never reads: every QX_PING it
  // sends makes the server queue an answer it cannot deliver.
  const raw = await rawWebSocket(Number(srv.url.port), PROTOCOL);
  await raw.send(encodeFrame("qmux-02", {
    type: "transport_parameters",
    payload: encodeTransportParams(DEFAULT_PARAMS, "qmux-02"),
  }));
  // qmux-02 ping sequences must increase: each batch continues the count.
  let seq = 0n;
  const batch = () =>
    concatBytes(
      Array.from({ length: 400 }, () =>
        encodeFrame("qmux-02", { type: "ping", response: false, sequence: seq++ })),
    );
  await until(() => srv.sessions.length > 0, "the server session");
  const session = srv.sessions[0]!;
  // Each batch asks for ~4 KB of answers; 1 MiB of unsent control frames ends the session.
  let sent = 0;
  const closed = session.closed.then((info) => info);
  const writing = (async () => {
    for (let i = 0; i < 2000; i++) {
      const more = await Promise.race([
        raw.send(batch()).then(() => true),
        closed.then(() => false),
      ]);
      if (!more) return;
      sent++;
    }
  })().catch(() => {});
  const info = await closed;
  assert.equal(info.dropped, true);
  assert.match(info.reason, /does not read/);
  await writing;
  assert.ok(sent < 2000, `sent ${sent} batches`);
  raw.close();
  await srv.stillServes();
  await srv.stop();
});
