// The funnel's /metrics: Prometheus text that a real parser reads, with counters that
// match the traffic sent.
import assert from "node:assert/strict";
import { families, histogramSeries, sampleValue } from "../../support/prometheus.ts";
import { startLiveFunnel } from "../../support/live_funnel.ts";

async function metricsText(base: string): Promise<string> {
  const r = await fetch(`${base}/metrics`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return await r.text();
}

async function post(base: string, body: string, key?: string): Promise<number> {
  const r = await fetch(`${base}/tracks/room/1/chat`, {
    method: "POST",
    body,
    headers: key ? { "idempotency-key": key } : {},
  });
  await r.body?.cancel();
  return r.status;
}

Deno.test("funnel /metrics at defaults: requests by route and status, commits, batches, latency, replays", async () => {
  await using f = await startLiveFunnel();
  for (let i = 0; i < 10; i++) assert.equal(await post(f.base, `${i}`, `k${i}`), 201);
  for (let i = 0; i < 3; i++) assert.equal(await post(f.base, `${i}`, `k${i}`), 201); // replays
  assert.equal(await post(f.base, "not json"), 400);
  assert.equal((await fetch(`${f.base}/tracks/room/1/chat?limit=5`)).status, 200);
  const none = await fetch(`${f.base}/tracks/room/1/none`);
  await none.body?.cancel();
  assert.equal(none.status, 404);
  const text = await metricsText(f.base);
  const fams = families(text);
  const v = (name: string, labels: Record<string, string> = {}) =>
    sampleValue(fams, `sluice_funnel_${name}`, labels);
  assert.equal(v("http_requests_total", { route: "post", status: "201" }), 13);
  assert.equal(v("http_requests_total", { route: "post", status: "400" }), 1);
  assert.equal(v("http_requests_total", { route: "history", status: "200" }), 1);
  assert.equal(v("records_committed_total"), 10);
  assert.equal(v("idempotent_replays_total"), 3);
  assert.equal(v("records_learned_total"), 0, "one process with a memory ledger learns nothing");
  assert.equal(v("listener_sessions"), 0);
  const [latency] = histogramSeries(text, "sluice_funnel_commit_latency_seconds");
  assert.equal(latency?.count, 10, "one latency per stored record, none for replays");
  const [batches] = histogramSeries(text, "sluice_funnel_commit_batch_records");
  assert.equal(batches?.sum, 10, "batch sizes add up to the records committed");
  const lag = histogramSeries(text, "sluice_funnel_publish_lag_seconds");
  assert.deepEqual(lag.map((s) => [s.labels.sink, s.count]), [["listener", 10]]);
});

// Changes a default, because a limit is needed to see a refusal: one record per second
// per sender with a burst of two (the test above is the same funnel at defaults).
Deno.test("funnel /metrics with FUNNEL_SENDER_LIMIT: refusals by limit; FUNNEL_METRICS_ADDR serves it apart", async () => {
  await using f = await startLiveFunnel({
    FUNNEL_SENDER_LIMIT: "1,2",
    FUNNEL_METRICS_ADDR: "127.0.0.1:0",
  });
  const statuses = [];
  for (let i = 0; i < 5; i++) statuses.push(await post(f.base, `${i}`));
  assert.deepEqual(statuses, [201, 201, 429, 429, 429]);
  assert.equal(
    (await fetch(`${f.base}/metrics`).then(async (r) => (await r.body?.cancel(), r))).status,
    404,
    "not on the ingest address",
  );
  const apart = `http://127.0.0.1:${f.funnel.metricsAddr!.port}`;
  const fams = families(await metricsText(apart));
  assert.equal(sampleValue(fams, "sluice_funnel_rate_limited_total", { limit: "sender" }), 3);
  assert.equal(
    sampleValue(fams, "sluice_funnel_http_requests_total", { route: "post", status: "429" }),
    3,
  );
});
