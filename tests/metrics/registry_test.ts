import assert from "node:assert/strict";
import { Registry } from "../../src/metrics/mod.ts";
import { families, histogramSeries } from "../support/prometheus.ts";

Deno.test("exposition with counters, gauges and histograms parses with a real parser", () => {
  const r = new Registry();
  const c = r.counter({ name: "t_requests_total", help: "Requests served", labels: ["code"] });
  const g = r.gauge({ name: "t_active", help: "Active things" });
  const h = r.histogram({
    name: "t_duration_seconds",
    help: "Durations",
    labels: ["path", "track"],
    buckets: [0.1, 1],
  });
  c.inc({ code: "200" });
  c.inc({ code: "200" }, 2);
  c.inc({ code: "404" });
  g.set({}, 7);
  g.add({}, -2);
  h.observe({ path: "/a", track: "x" }, 0.05);
  h.observe({ path: "/a", track: "x" }, 0.5);
  h.observe({ path: "/a", track: "x" }, 3);

  const text = r.render();
  const f = families(text);
  const req = f.get("t_requests_total")!;
  assert.equal(req.type, "COUNTER");
  assert.equal(req.help, "Requests served");
  assert.deepEqual(
    req.metrics.map((m) => [m.labels?.code, m.value]).sort(),
    [["200", "3"], ["404", "1"]],
  );
  assert.equal(f.get("t_active")!.metrics[0]!.value, "5");
  const hist = f.get("t_duration_seconds")!;
  assert.equal(hist.type, "HISTOGRAM");
  assert.deepEqual(hist.metrics[0]!.buckets, { "0.1": "1", "1": "2", "+Inf": "3" });
  assert.deepEqual(histogramSeries(text, "t_duration_seconds"), [
    { labels: { path: "/a", track: "x" }, sum: 3.55, count: 3 },
  ]);
  assert.match(text, /^t_duration_seconds_sum\{path="\/a",track="x"\} 3\.55$/m);
  assert.equal(c.value({ code: "200" }), 3);
});

Deno.test("every metric has HELP and TYPE lines even before its first sample", () => {
  const r = new Registry();
  r.counter({ name: "a_total", help: "A" });
  r.gauge({ name: "b", help: "B", labels: ["x"] });
  r.histogram({ name: "c_seconds", help: "C", buckets: [1] });
  const text = r.render();
  for (const n of ["a_total", "b", "c_seconds"]) {
    assert.match(text, new RegExp(`^# HELP ${n} `, "m"));
    assert.match(text, new RegExp(`^# TYPE ${n} `, "m"));
  }
  const f = families(text);
  assert.equal(f.get("a_total")!.metrics[0]!.value, "0");
  assert.equal(f.get("c_seconds")!.metrics[0]!.count, "0");
});

Deno.test("label values with quotes, backslashes and newlines survive a round trip", () => {
  const r = new Registry();
  const g = r.gauge({ name: "odd", help: "Help with \\ and\nnewline", labels: ["track"] });
  const nasty = 'a"b\\c\nd';
  g.set({ track: nasty }, 1);
  const f = families(r.render());
  assert.equal(f.get("odd")!.metrics[0]!.labels!.track, nasty);
});

Deno.test("a series with labels outside the fixed set is refused", () => {
  const r = new Registry();
  const c = r.counter({ name: "x_total", help: "X", labels: ["track"] });
  assert.throws(() => c.inc({ track: "a", subscriber: "42" }), TypeError);
  assert.throws(() => c.inc({}), TypeError);
  assert.throws(() => c.inc({ track: "a" }, -1), RangeError);
  assert.throws(() => r.counter({ name: "x_total", help: "again" }), TypeError);
  assert.throws(() => r.counter({ name: "bad-name", help: "" }), TypeError);
  assert.throws(() => r.histogram({ name: "h", help: "", buckets: [2, 1] }), RangeError);
});

Deno.test("removed series disappear and collectors refresh gauges at render time", () => {
  const r = new Registry();
  const g = r.gauge({ name: "rtt_ms", help: "RTT", labels: ["remote"] });
  let live = 3;
  const active = r.gauge({ name: "active", help: "Active" });
  r.onCollect(() => active.set({}, live));
  g.set({ remote: "1.2.3.4:5" }, 12);
  g.remove({ remote: "1.2.3.4:5" });
  live = 9;
  const f = families(r.render());
  assert.equal(f.get("rtt_ms")!.metrics.length, 0);
  assert.equal(f.get("active")!.metrics[0]!.value, "9");
});

Deno.test("a bound series adds to the same series as inc/observe, and survives remove()", () => {
  const r = new Registry();
  const c = r.counter({ name: "t_bytes_total", help: "Bytes", labels: ["track"] });
  const h = r.histogram({ name: "t_seconds", help: "Delay", labels: ["track"], buckets: [1] });
  const add = c.bind({ track: "a" });
  const observe = h.bind({ track: "a" });
  add(5);
  c.inc({ track: "a" }, 2);
  observe(0.5);
  h.observe({ track: "a" }, 2);
  assert.equal(c.value({ track: "a" }), 7);
  assert.deepEqual(h.snapshot({ track: "a" }), { count: 2, sum: 2.5 });
  c.remove({ track: "a" });
  add(1);
  assert.equal(c.value({ track: "a" }), 1, "the series is made again after its removal");
  assert.throws(() => add(-1), RangeError);
});
