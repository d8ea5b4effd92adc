/**
 * Our QMux sessions against @moq/qmux 0.3.3 (an independent implementation)
 * over real WebSockets, both roles, every draft: streams both ways with FIN,
 * reset and stop codes, flow control past the initial windows, datagrams,
 * and close codes and reasons both ways.
 */
import assert from "node:assert/strict";
import Theirs, { StreamError as TheirStreamError } from "@moq/qmux";
import { StreamError } from "../../../src/transport/errors.ts";
import {
  connectQMux,
  type QMuxDraft,
  type QMuxSession,
  selectSubprotocol,
} from "../../../src/transport/qmux/mod.ts";
import type { Session } from "../../../src/transport/session.ts";
import { serveQMux } from "../../support/qmux.ts";

const BIG = 3 * 1024 * 1024; // past every initial window (1 MiB connection, 256 KiB stream)

function pattern(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + 7) & 0xff;
  return b;
}

async function readAll(r: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(r).arrayBuffer());
}

/** Their client dialed to our server, negotiating `draft`. */
async function theirClientOurServer(draft: QMuxDraft) {
  let resolve!: (s: QMuxSession) => void;
  const ours = new Promise<QMuxSession>((r) => (resolve = r));
  const srv = await serveQMux((s) => resolve(s));
  const theirs = new Theirs(new URL("/x", srv.url.href.replace("ws:", "http:")), {
    protocols: ["moq-lite-05"],
    versions: { "moq-lite-05": draft },
    requireProtocol: true,
  });
  await theirs.ready;
  return { theirs, ours: await ours, stop: () => srv.stop() };
}

/** Our client dialed to their server (Session.accept on a Deno.upgradeWebSocket socket). */
async function ourClientTheirServer(draft: QMuxDraft) {
  let resolve!: (s: Theirs) => void;
  const theirs = new Promise<Theirs>((r) => (resolve = r));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const protocol = selectSubprotocol(req.headers.get("sec-websocket-protocol"), ["moq-lite-05"], {
      drafts: [draft],
    });
    if (!protocol) return new Response(null, { status: 400 });
    const { socket, response } = Deno.upgradeWebSocket(req, { protocol });
    resolve(Theirs.accept(socket as unknown as Parameters<typeof Theirs.accept>[0], { protocol }));
    return response;
  });
  const ours = await connectQMux(new URL(`ws://127.0.0.1:${server.addr.port}/`), {
    protocols: ["moq-lite-05"],
    drafts: [draft],
  });
  return { theirs: await theirs, ours, stop: () => server.shutdown() };
}

/** Streams both ways, flow control, codes and datagrams between `ours` and `theirs`. */
async function exercise(ours: Session, theirs: Theirs, draft: QMuxDraft): Promise<void> {
  assert.equal(ours.protocol, "moq-lite-05");
  assert.equal(theirs.protocol, "moq-lite-05");
  const data = pattern(BIG);

  // Their bidi stream: they write BIG and FIN, we echo it back.
  const tb = await theirs.createBidirectionalStream();
  const tw = tb.writable.getWriter();
  const sending = tw.write(data).then(() => tw.close());
  const ob = (await ours.acceptBidi())!;
  const echo = readAll(ob.readable).then(async (got) => {
    const w = ob.writable.getWriter();
    await w.write(got);
    await w.close();
    return got;
  });
  assert.deepEqual(await readAll(tb.readable), data);
  assert.deepEqual(await echo, data);
  await sending;

  // Our uni stream to them, BIG bytes.
  const ou = await ours.openUni();
  const ouw = ou.writable.getWriter();
  const ourSend = ouw.write(data).then(() => ouw.close());
  const reader = theirs.incomingUnidirectionalStreams.getReader();
  const tu = (await reader.read()).value!;
  reader.releaseLock();
  assert.deepEqual(await readAll(tu), data);
  await ourSend;

  // Reset codes both ways.
  const ob2 = await ours.openBidi();
  const w2 = ob2.writable.getWriter();
  await w2.write(new Uint8Array([1]));
  const bidiReader = theirs.incomingBidirectionalStreams.getReader();
  const tb2 = (await bidiReader.read()).value!;
  bidiReader.releaseLock();
  await w2.abort(new StreamError("reset", 42, "test"));
  await assert.rejects(readAll(tb2.readable), (e: unknown) => {
    assert.equal((e as { streamErrorCode?: number }).streamErrorCode, 42);
    return true;
  });
  const tw2 = tb2.writable.getWriter();
  await tw2.write(new Uint8Array([2]));
  await tw2.abort(new TheirStreamError(7));
  await assert.rejects(readAll(ob2.readable), (e: unknown) => {
    assert.ok(e instanceof StreamError);
    assert.equal(e.code, "stream_reset");
    assert.equal(e.wireCode, 7);
    return true;
  });

  // STOP_SENDING: we cancel their stream with code 9; their writes fail with 9.
  const tb3 = await theirs.createBidirectionalStream();
  const tw3 = tb3.writable.getWriter();
  await tw3.write(new Uint8Array([3]));
  const ob3 = (await ours.acceptBidi())!;
  await ob3.readable.cancel(new StreamError("stopped", 9, "enough"));
  await assert.rejects(
    (async () => {
      for (let i = 0; i < 100; i++) {
        await tw3.write(new Uint8Array(1000));
        await new Promise((r) => setTimeout(r, 5));
      }
    })(),
    (e: unknown) => (e as { streamErrorCode?: number }).streamErrorCode === 9,
  );

  // They stop ours with code 11: our writes fail with a "stopped" StreamError.
  const ob4 = await ours.openBidi();
  const w4 = ob4.writable.getWriter();
  await w4.write(new Uint8Array([4]));
  const reader4 = theirs.incomingBidirectionalStreams.getReader();
  const tb4 = (await reader4.read()).value!;
  reader4.releaseLock();
  await tb4.readable.cancel(new TheirStreamError(11));
  await assert.rejects(
    (async () => {
      for (let i = 0; i < 100; i++) {
        await w4.write(new Uint8Array(1000));
        await new Promise((r) => setTimeout(r, 5));
      }
    })(),
    (e: unknown) => e instanceof StreamError && e.code === "stream_stopped" && e.wireCode === 11,
  );

  // Datagrams exist from qmux-01 on, both ways.
  if (draft !== "qmux-00") {
    assert.ok(ours.maxDatagramSize! > 1000, `maxDatagramSize ${ours.maxDatagramSize}`);
    const dw = theirs.datagrams.writable.getWriter();
    await dw.write(new Uint8Array([5, 6, 7]));
    assert.deepEqual(await ours.readDatagram!(), new Uint8Array([5, 6, 7]));
    await ours.sendDatagram!(new Uint8Array([8, 9]));
    const dr = theirs.datagrams.readable.getReader();
    assert.deepEqual((await dr.read()).value, new Uint8Array([8, 9]));
    dr.releaseLock();
    dw.releaseLock();
  } else {
    assert.equal(ours.maxDatagramSize, 0);
  }
}

for (const draft of ["qmux-02", "qmux-01", "qmux-00"] as QMuxDraft[]) {
  Deno.test(`@moq/qmux ${draft}: their client ⇄ our server`, async () => {
    const { theirs, ours, stop } = await theirClientOurServer(draft);
    assert.equal(ours.format, draft);
    await exercise(ours, theirs, draft);
    // Their graceful close reaches us with its code and reason.
    theirs.close({ closeCode: 77, reason: "bye" });
    const info = await ours.closed;
    assert.deepEqual({ code: info.code, reason: info.reason }, { code: 77, reason: "bye" });
    assert.ok(!info.dropped);
    await stop();
  });

  Deno.test(`@moq/qmux ${draft}: our client ⇄ their server`, async () => {
    const { theirs, ours, stop } = await ourClientTheirServer(draft);
    await exercise(ours, theirs, draft);
    // Our graceful close reaches them with its code and reason.
    ours.close(88, "done here");
    assert.deepEqual(await theirs.closed, { closeCode: 88, reason: "done here" });
    await stop();
  });
}
