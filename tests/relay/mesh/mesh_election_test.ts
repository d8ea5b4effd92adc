// Route election between relay processes: the shorter path wins; of two
// paths of equal length the slower one (behind a UDP delay proxy) loses on
// RTT and is retained, is promoted when the faster one's publisher leaves,
// and loses again when it returns. The subscriber keeps one subscription
// and gets every group once, in order, through all of it.
import assert from "node:assert/strict";
import { type MoqSession, TrackProducer } from "../../../src/moq/mod.ts";
import { dialOurs } from "../../support/moq.ts";
import { startUdpProxy } from "../../support/udp_proxy.ts";
import { until, within } from "../../support/wait.ts";
import { meshCertificate, type MeshRelay, routeOf, startMeshRelay, stopMesh } from "./_mesh.ts";

const PATH = "live/x";

Deno.test("election: shorter path wins; the slower equal path loses on RTT, is retained and promoted", async () => {
  const files = await meshCertificate();
  const relays: MeshRelay[] = [];
  const fast = await startMeshRelay("fast", files);
  relays.push(fast);
  const slow = await startMeshRelay("slow", files);
  relays.push(slow);
  // 40 ms each way between c and slow.
  const proxy = startUdpProxy({
    targetPort: slow.port,
    toTarget: { delayMs: 40 },
    toClient: { delayMs: 40 },
  });
  const track = new TrackProducer({ cache: 64 });
  const sessions: MoqSession[] = [];
  const serve = {
    serve: (
      r: { path: string; track: string },
    ) => (r.path === PATH && r.track === "t" ? track : "not_found" as const),
  };
  try {
    const c = await startMeshRelay("c", files, [fast, `127.0.0.1:${proxy.port}`]);
    relays.push(c);
    await until(async () => (await c.metric("peers_connected")) === 2, "c to reach both peers");
    const viaFast = `127.0.0.1:${fast.port}`;
    const viaSlow = `127.0.0.1:${proxy.port}`;

    // The same broadcast published at both, the fast one first.
    const atFast = await dialOurs(fast.port, { moq: serve });
    const atSlow = await dialOurs(slow.port, { moq: serve });
    sessions.push(atFast, atSlow);
    let fastAnnouncement = atFast.announce(PATH);
    await routeOf(c, `/${PATH}`, (r) => r.source === viaFast);
    atSlow.announce(PATH);
    await until(
      async () => (await c.metric("route_rejections_total", { reason: "inferior_rtt" })) === 1,
      "the slower route to lose on RTT",
    );
    assert.equal(await c.metric("routes_retained"), 1, "the loser is kept as the alternate");
    const routes = await c.routes();
    assert.equal(routes[0]?.source, viaFast);
    const slowRtt = await c.metric("session_rtt_ms", { remote: viaSlow });
    assert.ok(slowRtt >= 80, `the delayed session's RTT is ${slowRtt} ms`);
    assert.ok(routes[0]!.rtt_ms + 5 <= slowRtt, `fast ${routes[0]!.rtt_ms} ms, slow ${slowRtt} ms`);

    // One subscriber at c for everything that follows.
    const sub = await dialOurs(c.port);
    sessions.push(sub);
    const s = sub.subscribe(PATH, "t");
    await s.ready;
    const it = s[Symbol.asyncIterator]();
    let seq = 1;
    const write = () => track.writeGroup(seq++, new TextEncoder().encode("x"));
    const probe = setInterval(write, 20);
    const first = (await within(it.next(), 10_000, "the first group")).value!.sequence;
    clearInterval(probe);
    const got: number[] = [first];
    let writer = true;
    let last: number | undefined;
    const writing = (async () => {
      while (writer) {
        write();
        await new Promise((r) => setTimeout(r, 10));
      }
      last = seq;
      write();
    })();
    const reading = (async () => {
      // Until every group up to the last arrived: one a route switch left behind is repaired
      // (fetched from the new route) and may arrive after newer ones.
      while (last === undefined || new Set(got).size < last - first + 1) {
        const r = await within(it.next(), 10_000, `group after ${got.at(-1)}`);
        if (r.done) throw new Error("the subscription ended");
        got.push(r.value.sequence);
      }
    })();

    // The fast route's publisher leaves: the slow alternate is promoted.
    fastAnnouncement.withdraw();
    await routeOf(c, `/${PATH}`, (r) => r.source === viaSlow);
    assert.equal(await c.metric("route_promotions_total"), 1);
    assert.equal(await c.metric("routes_retained"), 0);
    await new Promise((r) => setTimeout(r, 200));

    // It comes back: the faster route wins on RTT, the slow one is retained again.
    fastAnnouncement = atFast.announce(PATH);
    await routeOf(c, `/${PATH}`, (r) => r.source === viaFast);
    assert.equal(await c.metric("route_replacements_total"), 1);
    assert.equal(await c.metric("routes_retained"), 1);
    await new Promise((r) => setTimeout(r, 200));

    // A publisher on c itself: zero hops beat one, whatever the RTT.
    const direct = await dialOurs(c.port, { moq: serve });
    sessions.push(direct);
    direct.announce(PATH);
    const local = await routeOf(c, `/${PATH}`, (r) => r.hops === 0);
    assert.notEqual(local.source, viaFast);
    assert.equal(await c.metric("route_replacements_total"), 2);
    await new Promise((r) => setTimeout(r, 200));

    writer = false;
    await writing;
    await reading;
    const expected = Array.from({ length: last! - first + 1 }, (_, i) => first + i);
    assert.deepEqual(
      [...got].sort((a, b) => a - b),
      expected,
      "one subscription, every group once (a repaired one may come after newer ones)",
    );
    assert.equal(await c.metric("subscriber_skips_total"), 0);
    fastAnnouncement.withdraw();
  } catch (e) {
    for (const r of relays) console.error(`--- ${r.name}\n${r.process.lines.join("\n")}`);
    throw e;
  } finally {
    for (const s of sessions) s.close();
    await proxy.close();
    await stopMesh(relays, files);
  }
});
