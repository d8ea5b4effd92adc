/**
 * @moq/net 0.3.4 running moq-lite-05 over our QMux sessions, both roles:
 * in Deno it has no WebTransport, so `Connection.connect` falls back to
 * its WebSocket transport (@moq/qmux) and negotiates qmux-02.moq-lite-05
 * with our server; and our QMux client reaches an @moq/net server that
 * accepts with @moq/qmux. 300 groups each way.
 */
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import Theirs, { selectSubprotocol } from "@moq/qmux";
import { accept, connect, type MoqSession, TrackProducer } from "../../../src/moq/mod.ts";
import { connectQMux, type QMuxSession } from "../../../src/transport/qmux/mod.ts";
import { feedOptions } from "../../support/quic_pair.ts";
import { quiet } from "../../support/quiet.ts";
import { type NetConn, theyServeUs, weServeThem } from "../../support/net_feed.ts";
import { serveQMux, webSocketOnly } from "../../support/qmux.ts";
import { testCertificate } from "../../support/certs.ts";

const GROUPS = 300;

Deno.test("@moq/net (WebSocket fallback) ⇄ our QMux server: 300 groups each way", async () => {
  using _ = quiet();
  // Deno has a WebTransport class: hide it so @moq/net must fall back to WebSocket.
  using _ws = webSocketOnly((await testCertificate()).certPem);
  const producer = new TrackProducer({ cache: 8 });
  let transport!: QMuxSession;
  let resolve!: (m: MoqSession) => void;
  const oursP = new Promise<MoqSession>((r) => (resolve = r));
  const srv = await serveQMux((s) => {
    transport = s;
    void accept(s, feedOptions(producer)).then(resolve);
  });
  const theirs = await Net.Connection.connect(new URL(srv.url.href.replace("ws:", "http:")), {
    websocket: { delay: 0 },
  });
  const ours = await oursP;
  assert.equal(transport.format, "qmux-02");
  assert.equal(theirs.version, "moq-lite-05");
  assert.equal(ours.version, "moq-lite-05");
  await weServeThem(ours, producer, theirs, GROUPS);
  await theyServeUs(ours, theirs, GROUPS);
  theirs.close();
  await ours.closed;
  await srv.stop();
});

Deno.test("our QMux client ⇄ @moq/net server on @moq/qmux: 300 groups each way", async () => {
  using _ = quiet();
  let resolve!: (c: NetConn) => void;
  const theirsP = new Promise<NetConn>((r) => (resolve = r));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const protocol = selectSubprotocol(req.headers.get("sec-websocket-protocol"), {
      protocols: ["moq-lite-05"],
      versions: { "moq-lite-05": null },
      requireProtocol: true,
    });
    if (!protocol) return new Response(null, { status: 400 });
    const { socket, response } = Deno.upgradeWebSocket(req, { protocol });
    const session = Theirs.accept(socket as unknown as Parameters<typeof Theirs.accept>[0], {
      protocol,
    });
    // Their session knows its protocol only once ready; @moq/net reads it at accept.
    void session.ready
      .then(() => Net.Connection.accept(session as unknown as WebTransport, new URL(req.url)))
      .then(resolve);
    return response;
  });
  const session = await connectQMux(new URL(`ws://127.0.0.1:${server.addr.port}/`), {
    protocols: ["moq-lite-05", "moq-lite-04"],
  });
  assert.equal((session as QMuxSession).format, "qmux-02");
  const producer = new TrackProducer({ cache: 8 });
  const ours = await connect(session, feedOptions(producer));
  const theirs = await theirsP;
  assert.equal(theirs.version, "moq-lite-05");
  // @moq/qmux grants uni streams 100 at a time: keep within them (see weServeThem).
  await weServeThem(ours, producer, theirs, GROUPS, 64);
  await theyServeUs(ours, theirs, GROUPS);
  ours.close(0, "done");
  await theirs.closed.catch(() => {});
  await server.shutdown();
});
