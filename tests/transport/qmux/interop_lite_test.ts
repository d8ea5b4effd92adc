/**
 * @moq/lite 0.2.2 (moq-lite-04 on @moq/qmux 0.0.6) over our QMux server.
 * Given `protocols: ["moq-lite-04"]` its WebSocket session offers
 * `qmux-00, webtransport, qmux-00.moq-lite-04, webtransport.moq-lite-04`:
 * our server picks qmux-00.moq-lite-04, or the legacy
 * webtransport.moq-lite-04 form when it serves no QMux draft. (Without
 * `protocols` it offers no application protocol, which sluice refuses.)
 * 300 groups each way.
 */
import assert from "node:assert/strict";
import * as Lite from "@moq/lite";
import LegacySession from "@moq/qmux-0.0.6";
import { accept, type MoqSession, TrackProducer } from "../../../src/moq/mod.ts";
import type { QMuxDraft, QMuxSession } from "../../../src/transport/qmux/mod.ts";
import { feedOptions } from "../../support/quic_pair.ts";
import { quiet } from "../../support/quiet.ts";
import { theyServeUs, weServeThem } from "../../support/lite_feed.ts";
import { serveQMux } from "../../support/qmux.ts";

const GROUPS = 300;

for (
  const [name, drafts, format] of [
    ["qmux-00", ["qmux-00"], "qmux-00"],
    ["the legacy webtransport form", [], "webtransport"],
  ] as const
) {
  Deno.test(`@moq/lite over ${name} ⇄ our QMux server: 300 groups each way`, async () => {
    using _ = quiet();
    const producer = new TrackProducer({ cache: 8 });
    let transport!: QMuxSession;
    let resolve!: (m: MoqSession) => void;
    const oursP = new Promise<MoqSession>((r) => (resolve = r));
    const srv = await serveQMux((s) => {
      transport = s;
      void accept(s, feedOptions(producer)).then(resolve);
    }, { drafts: drafts as readonly QMuxDraft[] });
    const url = new URL(srv.url.href.replace("ws:", "http:"));
    const session = new LegacySession(url, { protocols: ["moq-lite-04"] });
    // @moq/lite picks its handshake from `protocol`, known once the session is ready.
    await session.ready;
    const theirs = await Lite.Connection.connect(url, {
      transport: session as unknown as WebTransport,
    });
    const ours = await oursP;
    assert.equal(transport.format, format);
    assert.equal(theirs.version, "moq-lite-04");
    assert.equal(ours.version, "moq-lite-04");
    // 0.0.6 grants streams 100 at a time and replenishes on each stream's end.
    await weServeThem(ours, producer, theirs, GROUPS, 64);
    await theyServeUs(ours, theirs, GROUPS);
    // We close: 0.0.6 throws out of its message handler when a stream arrives after its
    // own close (our session is still serving then), failing the test runner.
    ours.close(0, "done");
    await theirs.closed.catch(() => {});
    await srv.stop();
  });
}
