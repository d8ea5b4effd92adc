// A ring of three and a full mesh of four relay processes: every broadcast is
// announced once per relay, nothing loops, and the announce traffic settles
// (no route keeps changing; each relay considered each broadcast at most once
// per peer session).
import assert from "node:assert/strict";
import { type MoqSession, TrackProducer } from "../../../src/moq/mod.ts";
import { freeUdpTcpPort } from "../../../src/transport/mod.ts";
import { dialOurs } from "../../support/moq.ts";
import { until, within } from "../../support/wait.ts";
import { meshCertificate, type MeshRelay, routeOf, startMeshRelay, stopMesh } from "./_mesh.ts";

/** Publishes broadcast `path` (track "t") from our client on `relay`. */
async function publish(relay: MeshRelay, path: string) {
  const track = new TrackProducer();
  const moq = await dialOurs(relay.port, {
    moq: { serve: (r) => (r.path === path && r.track === "t" ? track : "not_found") },
  });
  moq.announce(path);
  return { moq, track };
}

/** Every active announcement a session sees in `ms`, counted per path. */
async function announcements(moq: MoqSession, ms: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  for await (const e of moq.announced("", { signal: ac.signal })) {
    if (e.active) counts[e.path] = (counts[e.path] ?? 0) + 1;
  }
  clearTimeout(timer);
  return counts;
}

async function routeCounters(r: MeshRelay): Promise<number> {
  let n = await r.metric("route_replacements_total") + await r.metric("route_promotions_total");
  for (
    const reason of ["inferior_hops", "equal_or_unknown", "inferior_rtt", "insufficient_rtt_margin"]
  ) {
    n += await r.metric("route_rejections_total", { reason });
  }
  return n;
}

/** The checks both topologies share; `sessions[i]` is relay i's number of peer sessions. */
async function converges(relays: MeshRelay[], sessions: number[], hops: Record<string, number>[]) {
  const published = [await publish(relays[0]!, "one"), await publish(relays.at(-1)!, "two")];
  const watchers = await Promise.all(relays.map((r) => dialOurs(r.port)));
  try {
    for (const [i, r] of relays.entries()) {
      for (const [path, h] of Object.entries(hops[i]!)) await routeOf(r, path, (x) => x.hops === h);
    }
    const before = await Promise.all(relays.map(routeCounters));
    const seen = await Promise.all(watchers.map((w) => announcements(w, 1000)));
    for (const [i, s] of seen.entries()) {
      assert.deepEqual(s, { one: 1, two: 1 }, `${relays[i]!.name} announces each broadcast once`);
    }
    const after = await Promise.all(relays.map(routeCounters));
    assert.deepEqual(after, before, "no route changed or was reconsidered once settled");
    for (const [i, r] of relays.entries()) {
      // Each broadcast reached this relay at most once per peer session (plus its publisher).
      const candidates = after[i]! + 2;
      assert.ok(candidates <= 2 * sessions[i]! + 1, `${r.name}: ${candidates} candidates`);
      assert.equal(await r.metric("broadcasts_active"), 2);
    }
    // Groups reach the relay farthest from "one"'s publisher once each.
    const far = watchers[Math.floor(relays.length / 2)]!;
    const sub = far.subscribe("one", "t");
    await sub.ready;
    const it = sub[Symbol.asyncIterator]();
    let seq = 1;
    const probe = setInterval(() => published[0]!.track.writeGroup(seq++, new Uint8Array([1])), 20);
    const firstGot = (await within(it.next(), 10_000, "the first group")).value!.sequence;
    clearInterval(probe);
    const start = seq;
    const writing = (async () => {
      for (let i = 0; i < 20; i++) {
        published[0]!.track.writeGroup(seq++, new Uint8Array([2]));
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const got: number[] = [];
    while (got.length < 20) {
      const g = (await within(it.next(), 10_000, `group ${start + got.length}`)).value!;
      if (g.sequence >= start) got.push(g.sequence);
    }
    await writing;
    assert.ok(firstGot < start);
    assert.deepEqual(got, Array.from({ length: 20 }, (_, i) => start + i));
  } finally {
    for (const w of watchers) w.close();
    for (const p of published) p.moq.close();
  }
}

Deno.test("a ring of three relays: each broadcast once per relay, no loop, traffic settles", async () => {
  const files = await meshCertificate();
  const [pa, pb, pc] = [freeUdpTcpPort(), freeUdpTcpPort(), freeUdpTcpPort()];
  const relays: MeshRelay[] = [];
  try {
    // a dials b, b dials c, c dials a (c's first dial finds nobody and is retried).
    const c = await startMeshRelay("ring-c", files, [pa], {}, pc);
    const b = await startMeshRelay("ring-b", files, [pc], {}, pb);
    const a = await startMeshRelay("ring-a", files, [pb], {}, pa);
    relays.push(a, b, c);
    await until(async () => (await c.metric("peers_connected")) === 1, "the ring to close");
    // "one" is published at a, "two" at c; everyone is one peer from both.
    await converges(relays, [2, 2, 2], [{ "/one": 0, "/two": 1 }, { "/one": 1, "/two": 1 }, {
      "/one": 1,
      "/two": 0,
    }]);
  } finally {
    await stopMesh(relays, files);
  }
});

Deno.test("a full mesh of four relays: each broadcast once per relay, no loop, traffic settles", async () => {
  const files = await meshCertificate();
  const relays: MeshRelay[] = [];
  try {
    // Each relay dials every relay started before it: six peer sessions, three per relay.
    const d = await startMeshRelay("mesh-d", files);
    const c = await startMeshRelay("mesh-c", files, [d]);
    const b = await startMeshRelay("mesh-b", files, [c, d]);
    const a = await startMeshRelay("mesh-a", files, [b, c, d]);
    relays.push(a, b, c, d);
    const one = { "/one": 1, "/two": 1 };
    await converges(relays, [3, 3, 3, 3], [{ "/one": 0, "/two": 1 }, one, one, {
      "/one": 1,
      "/two": 0,
    }]);
  } finally {
    await stopMesh(relays, files);
  }
});
