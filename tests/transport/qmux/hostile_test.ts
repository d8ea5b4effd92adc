/**
 * A hostile peer on a raw WebSocket against our QMux server: each abuse ends
 * that session with CONNECTION_CLOSE carrying the right QUIC transport error
 * code and a WebSocket close, while the server keeps serving others.
 */
import assert from "node:assert/strict";
import { TransportCode } from "../../../src/transport/qmux/errors.ts";
import { encodeFrame } from "../../../src/transport/qmux/frame.ts";
import { encodeTransportParams } from "../../../src/transport/qmux/params.ts";
import { connectQMux, DEFAULT_PARAMS, type QMuxSession } from "../../../src/transport/qmux/mod.ts";
import { concatBytes } from "../../../src/wire/mod.ts";
import { rawWebSocket, serveQMux } from "../../support/qmux.ts";
import { abuse, HOSTILE_CASES, PROTOCOL } from "../../support/qmux_hostile.ts";
import { until } from "../../support/wait.ts";

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

for (const c of HOSTILE_CASES) {
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
