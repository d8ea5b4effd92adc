// SIGTERM on a relay process: GOAWAY reaches its peers and its funnel, with
// and without a redirect. With one, the funnel moves there before leaving, so
// a subscriber on a peer relay keeps its subscription and gets every record
// once, in order.
import assert from "node:assert/strict";
import type { Logger } from "../../../src/log/mod.ts";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { until, within } from "../../support/wait.ts";
import { post } from "../../support/live_funnel.ts";
import {
  funnelThrough,
  keepPosting,
  logged,
  type MeshRelay,
  routeOf,
  startMeshRelay,
  stopMesh,
} from "./_mesh.ts";

const dec = new TextDecoder();

function recordingLog(lines: string[]) {
  return {
    error: (m: string) => lines.push(`error ${m}`),
    warn: (m: string) => lines.push(`warn ${m}`),
    info: (m: string) => lines.push(`info ${m}`),
    debug: () => {},
  } satisfies Logger;
}

// A redirect names native QUIC or, for networks that drop UDP, WebSocket: both are followed.
for (const [scheme, transport] of [["moqt", "quic"], ["wss", "websocket"]] as const) {
  Deno.test(`SIGTERM with GOAWAY_REDIRECT_URI=${scheme}://: the funnel and the peer move to the redirect, no record lost`, async () => {
    const files = await testCertificateFiles();
    const relays: MeshRelay[] = [];
    let funnel: AsyncDisposable | undefined;
    try {
      const w = await startMeshRelay("w", files);
      const x = await startMeshRelay("x", files, [], {
        GOAWAY_REDIRECT_URI: `${scheme}://localhost:${w.port}/`,
      });
      // A redirect is followed only to a host and port PEERS names: y peers with w too.
      const y = await startMeshRelay("y", files, [x, w]);
      relays.push(w, x, y);
      const logs: string[] = [];
      const f = await funnelThrough(x, files, { log: recordingLog(logs) });
      funnel = f;
      let n = 0;
      const postNext = async () =>
        assert.equal((await post(f.base, "room/1/chat", String(n++))).status, 201);
      await postNext();
      await routeOf(y, "/room/1", (r) => r.source === x.address);

      const sub = await dialOurs(y.port);
      await seeAnnounced(sub, "room/1");
      const s = sub.subscribe("room/1", "chat");
      await s.ready;
      const it = s[Symbol.asyncIterator]();
      const poster = keepPosting(postNext, 50);
      const got: number[] = [];
      const read = async (upTo: number) => {
        while (got.at(-1) === undefined || got.at(-1)! < upTo) {
          const r = await within(it.next(), 10_000, `the record after ${got.at(-1)}`);
          assert.ok(!r.done, "the subscription ended");
          got.push(JSON.parse(dec.decode(r.value.frames[0])).payload);
        }
      };
      await read(3);

      const started = Date.now();
      assert.equal(await x.stop("SIGTERM"), 0);
      assert.ok(Date.now() - started < 8000, "every session left well before the 10 s drain ended");
      assert.ok(x.process.lines.some((l) => l.includes("stopping (SIGTERM): GOAWAY sent")));
      assert.ok(!x.process.lines.some((l) => l.includes("still open")), x.process.lines.join("\n"));
      // Over WebSocket a peer's source is the name it was dialed by (localhost:port).
      await routeOf(y, "/room/1", (r) => r.source.endsWith(`:${w.port}`));
      assert.equal(await y.metric("peer_goaway_received_total", { redirect: "true" }), 1);
      assert.ok(
        logs.some((l) =>
          new RegExp(`^warn Relay .*: GOAWAY to ${scheme}://localhost:\\d+/$`).test(l)
        ),
        logs.join("\n"),
      );
      await read(n + 5);
      assert.equal(
        await w.metric("sessions_total", { transport, class: "client" }),
        1,
        `the funnel, over ${transport}`,
      );
      // A subscriber on the redirect itself receives what is posted after the move.
      const onW = await dialOurs(w.port);
      await seeAnnounced(onW, "room/1");
      const direct = onW.subscribe("room/1", "chat");
      await direct.ready;
      const mark = n;
      const it2 = direct[Symbol.asyncIterator]();
      for (let last = -1; last < mark;) {
        const r = await within(it2.next(), 10_000, `w's record after ${last}`);
        assert.ok(!r.done, "the subscription on w ended");
        last = JSON.parse(dec.decode(r.value.frames[0])).payload;
      }
      onW.close();
      await read(n + 2);
      await poster.stop();
      const expected = Array.from({ length: got.at(-1)! - got[0]! + 1 }, (_, i) => got[0]! + i);
      assert.deepEqual(got, expected, "every record once, in order, across the move");
      assert.equal(await y.metric("subscriber_skips_total"), 0);
      sub.close();
    } catch (e) {
      for (const r of relays) console.error(`--- ${r.name}\n${r.process.lines.join("\n")}`);
      throw e;
    } finally {
      await funnel?.[Symbol.asyncDispose]();
      await stopMesh(relays, files);
    }
  });
}

Deno.test("SIGTERM without a redirect: peers and the funnel see GOAWAY and leave, the relay exits at once", async () => {
  const files = await testCertificateFiles();
  const relays: MeshRelay[] = [];
  let funnel: AsyncDisposable | undefined;
  try {
    const x = await startMeshRelay("x", files);
    const y = await startMeshRelay("y", files, [x]);
    relays.push(x, y);
    const logs: string[] = [];
    const f = await funnelThrough(x, files, { log: recordingLog(logs) });
    funnel = f;
    assert.equal((await post(f.base, "room/1/chat", "1")).status, 201);
    await routeOf(y, "/room/1", (r) => r.source === x.address);
    const started = Date.now();
    assert.equal(await x.stop("SIGTERM"), 0);
    assert.ok(Date.now() - started < 8000, "the funnel and the peer left before the drain ended");
    assert.ok(!x.process.lines.some((l) => l.includes("still open")), x.process.lines.join("\n"));
    assert.equal(await y.metric("peer_goaway_received_total", { redirect: "false" }), 1);
    assert.ok(logs.some((l) => /^warn Relay .*: GOAWAY$/.test(l)), logs.join("\n"));
    await until(() => f.funnel.live.relay!.state === "reconnecting", "the funnel to redial");
    await until(async () => (await y.routes()).length === 0, "y's route to end");
    await logged(y, /sent GOAWAY$/);
  } catch (e) {
    for (const r of relays) console.error(`--- ${r.name}\n${r.process.lines.join("\n")}`);
    throw e;
  } finally {
    await funnel?.[Symbol.asyncDispose]();
    await stopMesh(relays, files);
  }
});
