/**
 * Our moq layer on our QMux sessions, both ends ours: every QMux draft (and
 * the legacy form) with both moq-lite versions, 300 groups each way, over
 * ws:// and wss:// with a certificate trusted through `caCerts`.
 */
import assert from "node:assert/strict";
import { accept, connect, type MoqSession, TrackProducer } from "../../../src/moq/mod.ts";
import { connectQMux, type QMuxDraft, type QMuxSession } from "../../../src/transport/qmux/mod.ts";
import { testCertificate } from "../../support/certs.ts";
import { seeAnnounced } from "../../support/moq.ts";
import { serveQMux } from "../../support/qmux.ts";

const GROUPS = 300;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** `publisher` announces "feed" and writes GROUPS groups; `subscriber` must get all of them in order. */
async function flow(publisher: MoqSession, track: TrackProducer, subscriber: MoqSession) {
  await seeAnnounced(subscriber, "feed");
  const sub = subscriber.subscribe("feed", "t");
  await sub.ready;
  track.writeGroup(1, enc.encode("g1"));
  const got: number[] = [];
  let writing: Promise<void> | undefined;
  for await (const g of sub) {
    assert.equal(dec.decode(g.frames[0]), `g${g.sequence}`);
    got.push(g.sequence);
    writing ??= (async () => {
      for (let s = 2; s <= GROUPS; s++) {
        track.writeGroup(s, enc.encode(`g${s}`));
        // Pace in small batches: the per-subscriber queue is a real bound that skips forward.
        if (s % 8 === 0) await new Promise((r) => setTimeout(r, 0));
      }
    })();
    if (g.sequence === GROUPS) break;
  }
  await writing;
  assert.deepEqual(got, Array.from({ length: GROUPS }, (_, i) => i + 1));
  void publisher;
}

async function bothWays(
  client: MoqSession,
  server: MoqSession,
  ct: TrackProducer,
  st: TrackProducer,
) {
  server.announce("feed");
  await flow(server, st, client);
  client.announce("feed");
  await flow(client, ct, server);
}

function options(track: TrackProducer) {
  return {
    serve: (r: { path: string }) => r.path === "feed" ? track : "not_found" as const,
    // A queue of 512 (shipped 16): every group of the burst is compared; skip-forward is tested
    // in tests/moq.
    maxGroupQueue: 512,
  };
}

for (const draft of ["qmux-02", "qmux-01", "qmux-00"] as QMuxDraft[]) {
  for (const version of ["moq-lite-05", "moq-lite-04"]) {
    Deno.test(`${version} over ${draft}: 300 groups each way between our client and server`, async () => {
      const st = new TrackProducer({ cache: 8 });
      const ct = new TrackProducer({ cache: 8 });
      let resolve!: (m: MoqSession) => void;
      const serverMoq = new Promise<MoqSession>((r) => (resolve = r));
      const srv = await serveQMux((s) => void accept(s, options(st)).then(resolve));
      const session = await connectQMux(new URL("/room?jwt=t", srv.url), {
        protocols: [version],
        drafts: [draft],
      });
      assert.equal(session.transport, "websocket");
      assert.equal(session.protocol, version);
      assert.equal((session as QMuxSession).format, draft);
      const client = await connect(session, options(ct));
      const server = await serverMoq;
      assert.equal(server.version, version);
      assert.equal(server.url?.pathname, "/room");
      assert.equal(server.url?.searchParams.get("jwt"), "t");
      await bothWays(client, server, ct, st);
      client.close(0, "done");
      const info = await server.closed;
      assert.equal(info.code, 0);
      await srv.stop();
    });
  }
}

Deno.test("moq-lite-05 over wss:// with the server certificate trusted through caCerts", async () => {
  const cert = await testCertificate();
  const st = new TrackProducer({ cache: 8 });
  const ct = new TrackProducer({ cache: 8 });
  let resolve!: (m: MoqSession) => void;
  const serverMoq = new Promise<MoqSession>((r) => (resolve = r));
  const srv = await serveQMux((s) => void accept(s, options(st)).then(resolve), { tls: true });
  assert.equal(srv.url.protocol, "wss:");
  const session = await connectQMux(srv.url, {
    protocols: ["moq-lite-05"],
    caCerts: [cert.certPem],
  });
  assert.equal((session as QMuxSession).format, "qmux-02");
  const client = await connect(session, options(ct));
  await bothWays(client, await serverMoq, ct, st);
  client.close(0, "");
  await srv.stop();
});
