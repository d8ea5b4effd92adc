/**
 * A peer that never answers our WebSocket close: the server lets the TCP
 * connection go after its close timeout instead of keeping it (and the
 * session) for as long as the peer likes.
 */
import assert from "node:assert/strict";
import type { QMuxSession } from "../../../src/transport/qmux/mod.ts";
import { type MessageSocket, webSocketSocket } from "../../../src/transport/qmux/socket.ts";
import { openRawWebSocket, type RawWebSocket } from "../../../src/transport/qmux/ws_client.ts";
import { Opcode, parseServerFrame } from "../../../src/transport/qmux/ws_frame.ts";
import { concatBytes } from "../../../src/wire/mod.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { serveQMux } from "../../support/qmux.ts";
import { until, within } from "../../support/wait.ts";

const PROTOCOL = "qmux-02.moq-lite-05";

/**
 * Reads the server's frames into `opcodes`, never answering any, until the
 * connection ends; resolves with them.
 */
async function readUntilEnd(raw: RawWebSocket, opcodes: number[] = []): Promise<number[]> {
  let pending = raw.rest;
  const chunk = new Uint8Array(64 * 1024);
  for (;;) {
    let parsed;
    while ((parsed = parseServerFrame(pending, 1 << 20))) {
      opcodes.push(parsed.frame.opcode);
      pending = pending.subarray(parsed.size);
    }
    const n = await raw.conn.read(chunk).catch(() => null);
    if (n === null) return opcodes;
    pending = concatBytes([pending, chunk.subarray(0, n)]);
  }
}

Deno.test("a server socket whose peer never answers its close lets the connection go at the timeout", async () => {
  const clock = new ManualClock();
  let socket: MessageSocket | undefined;
  let closedWith: number | undefined;
  const opened = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const upgraded = Deno.upgradeWebSocket(req, { protocol: PROTOCOL });
    socket = webSocketSocket(upgraded.socket, { timers: clock, closeTimeoutMs: 1000 });
    socket.listen({
      open: () => opened.resolve(),
      message: () => {},
      close: (code) => (closedWith = code),
    });
    return upgraded.response;
  });
  const raw = await openRawWebSocket(new URL(`ws://127.0.0.1:${server.addr.port}/`), {
    protocols: [PROTOCOL],
  });
  await opened.promise;
  const seen: number[] = [];
  const ended = readUntilEnd(raw, seen);
  socket!.close(1000, "bye");
  assert.deepEqual(clock.pending, [1000], "the close timeout is armed");
  await until(() => seen.includes(Opcode.CLOSE), "our close frame");
  // Until the timeout the connection stays (a peer may still answer).
  clock.advance(999);
  assert.equal(closedWith, undefined);
  clock.advance(1);
  const opcodes = await within(ended, 10_000, "the server to drop the connection");
  assert.deepEqual(opcodes, [Opcode.CLOSE], "our close frame went out, then the connection ended");
  await until(() => closedWith !== undefined, "the socket's close event");
  assert.deepEqual(clock.pending, []);
  raw.conn.close();
  await server.shutdown();
});

Deno.test("a peer that answers the close in time disarms the timeout", async () => {
  const clock = new ManualClock();
  let ws: WebSocket | undefined;
  let socket: MessageSocket | undefined;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const upgraded = Deno.upgradeWebSocket(req, { protocol: PROTOCOL });
    ws = upgraded.socket;
    socket = webSocketSocket(ws, { timers: clock });
    return upgraded.response;
  });
  const client = new WebSocket(`ws://127.0.0.1:${server.addr.port}/`, [PROTOCOL]);
  await new Promise((r) => (client.onopen = r));
  const clientClosed = new Promise((r) => (client.onclose = r));
  const serverClosed = new Promise((r) => ws!.addEventListener("close", r));
  socket!.close(1000, "bye");
  await Promise.all([clientClosed, serverClosed]);
  assert.deepEqual(clock.pending, [], "the close timer was cleared");
  await server.shutdown();
});

Deno.test("a QMux server session closed on a silent peer frees its connection", async () => {
  let session: QMuxSession | undefined;
  const srv = await serveQMux((s) => (session = s));
  const raw = await openRawWebSocket(new URL(srv.url), { protocols: [PROTOCOL] });
  await until(() => session !== undefined, "the server session");
  const ended = readUntilEnd(raw);
  session!.close(0, "bye");
  await session!.closed;
  // The peer reads everything and answers nothing: the server ends the connection itself.
  const opcodes = await within(ended, 10_000, "the server to drop the connection");
  assert.equal(opcodes.at(-1), Opcode.CLOSE);
  raw.conn.close();
  await srv.stop();
});
