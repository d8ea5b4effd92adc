import assert from "node:assert/strict";
import { createRelayHandler, formatDuration } from "../../../src/relay/ops/http_handler.ts";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import { RelayCore } from "../../../src/relay/routing/relay_core.ts";
import type { UpstreamTrack } from "../../../src/relay/routing/upstream_track.ts";
import { families } from "../../support/prometheus.ts";
import { BEYOND_SPEC_METRICS, SPEC_METRICS } from "../metrics/_spec_metrics.ts";

function make(pprof = false) {
  let t = Date.parse("2026-01-01T00:00:00Z");
  const metrics = createRelayMetrics();
  const now = () => t;
  // Orphan 0 (shipped 10 s): these cases never wait for a publisher to come back.
  const core = new RelayCore({ metrics, cacheSize: 8, now, orphanMs: 0 });
  const handler = createRelayHandler({
    core,
    metrics,
    now,
    startedAt: t,
    ready: () => true,
    pprof,
  });
  return { core, metrics, handler, advance: (ms: number) => (t += ms) };
}

/** A loopback client: at the defaults the only one answered on /routes, /metrics and pprof. */
const LOOPBACK: Deno.NetAddr = { transport: "tcp", hostname: "127.0.0.1", port: 40000 };

const get = (h: (r: Request, remote?: Deno.NetAddr) => Promise<Response>, path: string) =>
  h(new Request(`https://relay.test${path}`), LOOPBACK);

Deno.test("/routes is an empty paths array when idle, with every top-level field", async () => {
  const { handler, advance } = make();
  advance(3_723_500);
  const res = await get(handler, "/routes");
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  const body = await res.json();
  assert.deepEqual(body, {
    timestamp: "2026-01-01T01:02:03.500Z",
    uptime: "1h2m3.5s",
    live: true,
    ready: true,
    paths: [],
  });
});

Deno.test("/routes lists each announced broadcast with the spec's fields", async () => {
  const { core, handler, advance } = make();
  const never: UpstreamTrack = { groups: (async function* () {})(), close() {} };
  const ann = core.routes.announce("room/1", {
    remote: "192.0.2.7:50000",
    hops: 0,
    subscribe: () => Promise.resolve(never),
    rttMs: () => 12.4,
  });
  advance(1000);
  const body = await (await get(handler, "/routes")).json();
  assert.deepEqual(body.paths, [{
    path: "/room/1",
    active: true,
    announced_at: "2026-01-01T00:00:00.000Z",
    hops: 0,
    rtt_ms: 12,
    bitrate_bps: 0,
    source: "192.0.2.7:50000",
    last_updated: "2026-01-01T00:00:00.000Z",
  }]);
  ann.end();
});

Deno.test("/routes says a route is inactive while its only source is going away", async () => {
  const { core, handler } = make();
  const never: UpstreamTrack = { groups: (async function* () {})(), close() {} };
  let draining = false;
  const ann = core.routes.announce("room/1", {
    remote: "192.0.2.7:50000",
    hops: 1,
    subscribe: () => Promise.resolve(never),
    alive: () => !draining,
  });
  const active = async () =>
    ((await (await get(handler, "/routes")).json()).paths as { active: boolean }[]).map((p) =>
      p.active
    );
  assert.deepEqual(await active(), [true]);
  // The peer sent GOAWAY and no alternate is retained: the route stays until it is left.
  draining = true;
  assert.deepEqual(await active(), [false]);
  ann.end();
  assert.deepEqual(await active(), []);
});

Deno.test("/metrics serves every spec metric with HELP, TYPE and only the spec labels", async () => {
  const { handler } = make();
  const res = await get(handler, "/metrics");
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const f = families(text);
  for (const m of [...SPEC_METRICS, ...BEYOND_SPEC_METRICS]) {
    const fam = f.get(m.name);
    assert.ok(fam, `${m.name} is exposed`);
    assert.equal(fam.type, m.type, `${m.name} type`);
    assert.ok(fam.help.length > 0, `${m.name} has HELP`);
  }
  const names = new Set([...SPEC_METRICS, ...BEYOND_SPEC_METRICS].map((m) => m.name));
  for (const name of f.keys()) {
    assert.ok(names.has(name), `${name} is in the spec or documented beyond it`);
  }
});

Deno.test("/health answers 200, unknown paths 404 problem+json, pprof is off by default", async () => {
  const { handler } = make();
  assert.equal((await get(handler, "/health")).status, 200);
  for (const p of ["/nope", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"]) {
    const res = await get(handler, p);
    assert.equal(res.status, 404, p);
    assert.equal(res.headers.get("content-type"), "application/problem+json");
    await res.body?.cancel();
  }
});

Deno.test("with RELAY_PPROF the CPU profile and heap snapshot open as DevTools formats", async () => {
  const { handler } = make(true);
  const bad = await get(handler, "/debug/pprof/profile?seconds=abc");
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
  const prof = await (await get(handler, "/debug/pprof/profile?seconds=1")).json();
  assert.ok(Array.isArray(prof.nodes) && prof.nodes.length > 0, "cpuprofile has nodes");
  assert.ok(typeof prof.startTime === "number" && typeof prof.endTime === "number");
  const heap = await (await get(handler, "/debug/pprof/heap")).json();
  assert.ok(heap.snapshot?.meta?.node_fields, "heapsnapshot has its meta block");
  assert.ok(Array.isArray(heap.nodes) && heap.nodes.length > 0);
});

Deno.test("durations print like Go's time.Duration", () => {
  assert.equal(formatDuration(0), "0s");
  assert.equal(formatDuration(250), "250ms");
  assert.equal(formatDuration(61_000), "1m1s");
  assert.equal(formatDuration(7_200_000), "2h0m0s");
});
