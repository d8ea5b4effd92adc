/**
 * Deno's WebSocket ping timeout (`Deno.upgradeWebSocket`'s `idleTimeout`, 30 s
 * by default: a ping after 15 s without a message, a close 15 s later without
 * one) is off on QMux drafts that keep the session alive with QX_PING. In
 * Deno 2.9 a message that arrives while its ping is still being written
 * leaves a timer armed that nothing cancels, and that timer closes a session
 * that answered every ping: one of 3 000 WebSocket subscribers of a load run
 * ended with 1001 "No response from ping frame.". qmux-00 has no QX_PING, so
 * Deno's ping stays its liveness check.
 *
 * The qmux-00 session's first ping (about 15 s after it opened) is the
 * test's clock: the qmux-02 session opened a second earlier, so its ping, if
 * it got one, came first.
 */
import assert from "node:assert/strict";
import { openRawWebSocket, type RawWebSocket } from "../../../src/transport/qmux/ws_client.ts";
import { Opcode, parseServerFrame } from "../../../src/transport/qmux/ws_frame.ts";
import type { QMuxSession } from "../../../src/transport/qmux/mod.ts";
import { concatBytes } from "../../../src/wire/mod.ts";
import { serveQMux } from "../../support/qmux.ts";
import { until } from "../../support/wait.ts";

/** Collects the opcodes of the server's frames, answering none, until the connection ends. */
async function collectOpcodes(raw: RawWebSocket, opcodes: number[]): Promise<void> {
  let pending = raw.rest;
  const chunk = new Uint8Array(64 * 1024);
  for (;;) {
    let parsed;
    while ((parsed = parseServerFrame(pending, 1 << 20))) {
      opcodes.push(parsed.frame.opcode);
      pending = pending.subarray(parsed.size);
    }
    const n = await raw.conn.read(chunk).catch(() => null);
    if (n === null) return;
    pending = concatBytes([pending, chunk.subarray(0, n)]);
  }
}

Deno.test("the server sends WebSocket pings on qmux-00 only: qmux-02 sessions are kept alive by QX_PING", async () => {
  const sessions: QMuxSession[] = [];
  const srv = await serveQMux((s) => sessions.push(s), { drafts: ["qmux-02", "qmux-00"] });
  const raws: RawWebSocket[] = [];
  try {
    const q2 = await openRawWebSocket(srv.url, { protocols: ["qmux-02.moq-lite-05"] });
    raws.push(q2);
    assert.equal(q2.protocol, "qmux-02.moq-lite-05");
    const q2Frames: number[] = [];
    const q2Done = collectOpcodes(q2, q2Frames);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const q0 = await openRawWebSocket(srv.url, { protocols: ["qmux-00.moq-lite-05"] });
    raws.push(q0);
    assert.equal(q0.protocol, "qmux-00.moq-lite-05");
    const q0Frames: number[] = [];
    const q0Done = collectOpcodes(q0, q0Frames);
    await until(() => q0Frames.includes(Opcode.PING), "a WebSocket ping on qmux-00");
    assert.ok(
      !q2Frames.includes(Opcode.PING),
      `qmux-02 got a WebSocket ping (frames ${q2Frames.join(", ")})`,
    );
    for (const s of sessions) s.close(0, "");
    for (const r of raws) r.conn.close();
    await Promise.all([q2Done, q0Done]);
  } finally {
    for (const r of raws) {
      try {
        r.conn.close();
      } catch {
        // already closed
      }
    }
    await srv.stop();
  }
});
