import assert from "node:assert/strict";
import {
  formatResult,
  LatencyHistogram,
  loadgen,
  parseLoadgenArgs,
} from "../../bench/support/loadgen/mod.ts";
import { failureReason } from "../../bench/support/loadgen/protocol.ts";

Deno.test("loadgen arguments are parsed and bad ones named", () => {
  const o = parseLoadgenArgs([
    "--subscribers",
    "1000",
    "--rate",
    "30",
    "--size",
    "1200",
    "--relay-env",
    "DENO_V8_FLAGS=--max-semi-space-size=32",
  ]);
  assert.equal(o.subscribers, 1000);
  assert.equal(o.rate, 30);
  assert.equal(o.size, 1200);
  assert.deepEqual(o.relayEnv, { DENO_V8_FLAGS: "--max-semi-space-size=32" });
  assert.throws(() => parseLoadgenArgs(["--size", "4"]), /--size/);
  assert.throws(() => parseLoadgenArgs(["--transport", "tcp"]), /--transport/);
  assert.equal(parseLoadgenArgs(["--transport", "websocket"]).transport, "websocket");
  assert.throws(() => parseLoadgenArgs(["--bogus"]), /Unknown argument/);
  assert.equal(parseLoadgenArgs(["--ramp", "200/s"]).ramp, 200);
  assert.equal(parseLoadgenArgs([]).ramp, 0, "unpaced unless asked");
  assert.equal(parseLoadgenArgs([]).rampLimit, 0, "no ramp limit unless asked");
  assert.equal(parseLoadgenArgs(["--ramp-limit", "120"]).rampLimit, 120);
  assert.throws(() => parseLoadgenArgs(["--ramp-limit", "-1"]), /--ramp-limit/);
  assert.equal(parseLoadgenArgs(["--target", "raw"]).target, "raw");
  assert.throws(() => parseLoadgenArgs(["--target", "nginx"]), /--target/);
  assert.throws(
    () => parseLoadgenArgs(["--target", "raw", "--transport", "websocket"]),
    /native QUIC only/,
  );
});

Deno.test("loadgen counts failures by reason, numbers and addresses folded", () => {
  assert.equal(failureReason("Session closed (15 no SETUP)"), "Session closed (# no SETUP)");
  assert.equal(
    failureReason('Cannot open QMux to "wss://localhost:4433/": Refused with 503'),
    failureReason('Cannot open QMux to "wss://localhost:5001/": Refused with 503'),
  );
});

Deno.test("latency quantiles come from 0.1 ms buckets", () => {
  const h = new LatencyHistogram();
  for (let i = 1; i <= 100; i++) h.record(i);
  assert.equal(h.total, 100);
  assert.equal(h.quantile(0.5), 50.1);
  assert.equal(h.quantile(0.99), 99.1);
  assert.ok(Number.isNaN(new LatencyHistogram().quantile(0.5)));
});

Deno.test("slow set-ups are counted by whole seconds, 10 s and over in the last", () => {
  const h = new LatencyHistogram();
  for (const ms of [5, 999, 1000, 2999, 3000, 9999.9, 10_000, 60_000]) h.record(ms);
  assert.deepEqual(h.bySecond(), [2, 1, 1, 1, 0, 0, 0, 0, 0, 1, 2]);
});

for (const transport of ["quic", "websocket"] as const) {
  Deno.test(`loadgen holds ${transport} sessions on a real relay process and measures delivery`, async () => {
    const lines: string[] = [];
    const r = await loadgen({
      ...parseLoadgenArgs([]),
      transport,
      subscribers: 4,
      rate: 20,
      size: 64,
      duration: 1,
      settle: 0,
    }, (l) => lines.push(l));
    assert.equal(r.held, 4);
    assert.equal(r.failed, 0);
    assert.ok(r.latency_ms.samples > 0, "latency was sampled");
    assert.ok(r.loss_percent >= 0 && r.loss_percent <= 100);
    assert.ok(r.relay_rss_mib > 0);
    assert.ok(lines.some((l) => l.startsWith("measure 1/1s")), "progress lines are printed");
    assert.match(formatResult(r), /sessions held 4/);
    // Admission apart from holding, and CPU per unit.
    assert.equal(r.admission.per_second.reduce((a, b) => a + b, 0), 4, "every set-up counted");
    assert.ok(r.admission.setup_ms.p50 > 0);
    // The handshake is part of the set-up, and its longest is measured, not capped at 10 s.
    assert.ok(r.admission.handshake_ms.p50 <= r.admission.setup_ms.p50);
    assert.ok(r.admission.setup_ms.max >= r.admission.setup_ms.p50 - 0.1);
    assert.equal(r.admission.slow_by_second.setup.length, 11);
    assert.deepEqual(r.admission.failures, {});
    assert.ok(r.cpu.relay_us_per_delivered >= 0);
    assert.ok(r.relay_memory_after_gc_mib !== undefined, "memory after a GC is reported");
  });
}

Deno.test("loadgen --target raw holds bare QUIC connections and measures delivery the same way", async () => {
  const r = await loadgen({
    ...parseLoadgenArgs(["--target", "raw", "--ramp", "20"]),
    subscribers: 4,
    rate: 20,
    size: 64,
    duration: 1,
    settle: 0,
  }, () => {});
  assert.equal(r.held, 4);
  assert.equal(r.failed, 0);
  assert.ok(r.latency_ms.samples > 0, "latency was sampled");
  assert.equal(r.loss_percent, 0);
  assert.equal(r.admission.target_per_s, 20);
  assert.ok(r.relay_rss_mib > 0);
});
