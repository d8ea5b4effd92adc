/**
 * Our QMux sessions against each other over real WebSockets: back-pressure
 * from a slow reader, stream-count replenishment, keep-alive and idle
 * timeout, close both ways, the legacy format.
 */
import assert from "node:assert/strict";
import { SessionClosedError, StreamError } from "../../../src/transport/errors.ts";
import { encodeFrame } from "../../../src/transport/qmux/frame.ts";
import { connectQMux, DEFAULT_PARAMS, QMuxSession } from "../../../src/transport/qmux/mod.ts";
import { encodeTransportParams } from "../../../src/transport/qmux/params.ts";
import { qmuxPair, rawWebSocket, serveQMux } from "../../support/qmux.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { until, within } from "../../support/wait.ts";

async function readAll(r: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(r).arrayBuffer());
}

Deno.test("a reader that does not read holds the writer back: bounded, then everything arrives", async () => {
  const { client, server, stop } = await qmuxPair();
  const s = await client.openUni();
  const w = s.writable.getWriter();
  const chunk = new Uint8Array(16 * 1024).fill(9);
  let written = 0;
  const total = 400; // 6.4 MiB, far past every window and socket buffer
  const writing = (async () => {
    for (let i = 0; i < total; i++) {
      await w.write(chunk);
      written++;
    }
    await w.close();
  })();
  const theirs = (await server.acceptUni())!;
  // Nobody reads: the writer stalls once the stream window (256 KiB) and the socket's
  // high-water mark (256 KiB) are used, plus what the kernel's TCP buffers hold.
  let last = -1;
  while (written !== last) {
    last = written;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(written < total, "the writer never waited");
  const stalledBytes = written * chunk.length;
  // The stream window (our default 256 KiB, granted by the reader) is what stops it.
  assert.ok(stalledBytes <= DEFAULT_PARAMS.initialMaxStreamDataUni, `${stalledBytes} bytes`);
  const got = await readAll(theirs.readable);
  await writing;
  assert.equal(got.length, total * chunk.length);
  await stop();
});

Deno.test("a peer that never reads its socket holds writes back at the high-water mark", async () => {
  const sessions: QMuxSession[] = [];
  const srv = await serveQMux((s) => sessions.push(s), { accept: { highWater: 64 * 1024 } });
  const raw = await rawWebSocket(Number(srv.url.port), "qmux-02.moq-lite-05");
  // Huge windows: only the socket can hold the server back.
  const huge = 1 << 30;
  await raw.send(encodeFrame("qmux-02", {
    type: "transport_parameters",
    payload: encodeTransportParams({
      ...DEFAULT_PARAMS,
      initialMaxData: huge,
      initialMaxStreamDataUni: huge,
      maxIdleTimeout: 0,
    }, "qmux-02"),
  }));
  await until(() => sessions[0]?.peerParams !== undefined, "the peer's parameters");
  const w = (await sessions[0]!.openUni()).writable.getWriter();
  const chunk = new Uint8Array(64 * 1024);
  let written = 0;
  void (async () => {
    for (;;) {
      await w.write(chunk);
      written += chunk.length;
    }
  })().catch(() => {});
  let last = -1;
  while (written !== last) {
    last = written;
    await new Promise((r) => setTimeout(r, 200));
  }
  // What the kernel's socket buffers take plus our 64 KiB mark: megabytes, not unbounded.
  assert.ok(written < 16 * 1024 * 1024, `${written} bytes accepted from a peer that never reads`);
  raw.close();
  await sessions[0]!.closed;
  await srv.stop();
});

Deno.test("stream limits are replenished: 3000 streams through a 20-stream window", async () => {
  // The client grants the server 20 uni streams at a time: MAX_STREAMS must keep coming.
  const { client, server, stop } = await qmuxPair({
    params: { initialMaxStreamsBidi: 20, initialMaxStreamsUni: 20 },
  });
  const N = 3000;
  const reading = (async () => {
    let n = 0;
    while (n < N) {
      const s = await client.acceptUni();
      if (!s) break;
      assert.equal((await readAll(s.readable))[0], n % 256);
      n++;
    }
    return n;
  })();
  for (let i = 0; i < N; i++) {
    const s = await server.openUni();
    const w = s.writable.getWriter();
    await w.write(new Uint8Array([i % 256]));
    await w.close();
  }
  assert.equal(await reading, N);
  await stop();
});

Deno.test("sendOrder: a higher-priority stream overtakes a bulk one", async () => {
  const { client, server, stop } = await qmuxPair({ highWater: 16 * 1024 });
  const bulk = await client.openUni({ sendOrder: 0 });
  const bw = bulk.writable.getWriter();
  const bulkDone = bw.write(new Uint8Array(2 * 1024 * 1024)).then(() => bw.close());
  const urgent = await client.openUni({ sendOrder: 10 });
  const uw = urgent.writable.getWriter();
  const order: string[] = [];
  const urgentDone = uw.write(new Uint8Array([1])).then(() => uw.close()).then(() =>
    order.push("urgent")
  );
  void bulkDone.then(() => order.push("bulk"));
  const streams = [(await server.acceptUni())!, (await server.acceptUni())!];
  await Promise.all(streams.map((s) => readAll(s.readable)));
  await Promise.all([bulkDone, urgentDone]);
  assert.deepEqual(order, ["urgent", "bulk"]);
  await stop();
});

Deno.test("close with code and reason reaches the peer, both ways; streams then fail", async () => {
  for (const closer of ["client", "server"] as const) {
    const { client, server, stop } = await qmuxPair();
    const s = await client.openBidi();
    const w = s.writable.getWriter();
    await w.write(new Uint8Array([1]));
    const [a, b] = closer === "client" ? [client, server] : [server, client];
    a.close(4242, "goodbye");
    const info = await b.closed;
    assert.deepEqual(info, { code: 4242, reason: "goodbye" });
    assert.deepEqual(await a.closed, { code: 4242, reason: "goodbye" });
    await assert.rejects(w.write(new Uint8Array([2])), SessionClosedError);
    await assert.rejects(client.openUni(), SessionClosedError);
    assert.equal(await server.acceptBidi().then(() => server.acceptBidi()), undefined);
    await stop();
  }
});

Deno.test("a quiet session stays up on QX_PING; a silent peer is dropped at the idle timeout", async () => {
  // Both sides give up after 300 ms without a frame; pings every 100 ms keep them alive.
  const params = { maxIdleTimeout: 300 };
  const sessions: QMuxSession[] = [];
  const srv = await serveQMux((s) => sessions.push(s), { accept: { params } });
  const client = await connectQMux(srv.url, { protocols: ["moq-lite-05"], params });
  let settled = false;
  void client.closed.then(() => (settled = true));
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(settled, false, "a quiet but healthy session was dropped");
  // A raw WebSocket that sends its parameters and then never answers a ping.
  const mute = new WebSocket(srv.url, ["qmux-02.moq-lite-05"]);
  await new Promise((r) => (mute.onopen = r));
  mute.send(encodeFrame("qmux-02", {
    type: "transport_parameters",
    payload: encodeTransportParams({ ...DEFAULT_PARAMS, maxIdleTimeout: 0 }, "qmux-02"),
  }));
  const started = performance.now();
  const info = await sessions[1]!.closed;
  assert.equal(info.dropped, true);
  assert.match(info.reason, /No frame from the peer for 300 ms/);
  assert.ok(performance.now() - started < 5000);
  assert.equal(settled, false);
  client.close(0, "");
  mute.close();
  await srv.stop();
});

Deno.test("the legacy webtransport form carries streams, resets and closes", async () => {
  let server!: QMuxSession;
  const srv = await serveQMux((s) => (server = s), { drafts: [] });
  const ws = new WebSocket(srv.url, ["webtransport.moq-lite-05"]);
  await new Promise((r) => (ws.onopen = r));
  assert.equal(ws.protocol, "webtransport.moq-lite-05");
  const client = new QMuxSession(ws, {
    role: "client",
    subprotocol: ws.protocol,
    remote: "server",
  });
  assert.equal(client.format, "webtransport");
  assert.equal(client.protocol, "moq-lite-05");
  const s = await client.openBidi();
  const w = s.writable.getWriter();
  const data = new Uint8Array(100_000).map((_, i) => i);
  const sending = w.write(data).then(() => w.close());
  await until(() => server !== undefined, "the server session");
  const theirs = (await server.acceptBidi())!;
  assert.deepEqual(await readAll(theirs.readable), data);
  await sending;
  const tw = theirs.writable.getWriter();
  await tw.write(new Uint8Array([1]));
  await tw.abort(new StreamError("reset", 5, "x"));
  await assert.rejects(
    readAll(s.readable),
    (e: unknown) => e instanceof StreamError && e.wireCode === 5,
  );
  assert.equal(client.maxDatagramSize, 0);
  server.close(3, "legacy bye");
  assert.deepEqual(await client.closed, { code: 3, reason: "legacy bye" });
  await srv.stop();
});

Deno.test("a server session closed before its upgrade went out still tells the client why", async () => {
  // Closed in the upgrade handler itself: the socket opens only after the response is sent.
  const srv = await serveQMux((s) => s.close(4003, "not today"));
  const client = await connectQMux(srv.url, { protocols: ["moq-lite-05"] });
  assert.deepEqual(await client.closed, { code: 4003, reason: "not today" });
  await srv.stop();
});

Deno.test("a server session whose peer sends no transport parameters within the setup deadline is closed; one that sent them stays", async () => {
  const clock = new ManualClock();
  const sessions: QMuxSession[] = [];
  const srv = await serveQMux((s) => sessions.push(s), {
    accept: { setupTimeoutMs: 5000, timers: clock },
  });
  const silent = await rawWebSocket(srv.port, "qmux-02.moq-lite-05");
  await until(() => sessions.length === 1, "the silent session");
  const client = await connectQMux(srv.url, { protocols: ["moq-lite-05"] });
  await until(() => sessions.length === 2, "the client's session");
  const [idle, setUp] = sessions as [QMuxSession, QMuxSession];
  assert.equal(await setUp.established, true);
  const ended = new Set<QMuxSession>();
  for (const s of sessions) s.closed.then(() => ended.add(s));
  const settled = () => new Promise((r) => setTimeout(r, 0));
  clock.advance(4999);
  await settled();
  assert.equal(ended.size, 0, "nothing ends before the deadline");
  clock.advance(1);
  const info = await within(idle.closed, 5000, "the silent session to end");
  assert.equal(info.reason, "No transport parameters within 5000 ms");
  assert.equal(await idle.established, false);
  await settled();
  assert.ok(!ended.has(setUp), "the session that sent its parameters stays");
  silent.close();
  client.close(0, "");
  setUp.close(0, "");
  await srv.stop();
});
