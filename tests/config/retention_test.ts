import assert from "node:assert/strict";
import { ConfigError } from "../../src/config/errors.ts";
import { loadFunnelConfig } from "../../src/config/funnel.ts";
import {
  parseRetentionPolicy,
  parseRetentionRules,
  retentionFor,
} from "../../src/config/retention.ts";

Deno.test("LEDGER_RETENTION: keep forever by default, limits parsed once, bad values named", () => {
  const shipped = loadFunnelConfig({}).retention;
  assert.deepEqual(shipped, { default: {}, rules: [], intervalMs: 60_000 });
  const set = loadFunnelConfig({
    LEDGER_RETENTION: "age=30d, count=10000 bytes=1GiB",
    LEDGER_RETENTION_RULES: "chat: age=12h; chat/vip: forever; telemetry/: bytes=512MiB",
    LEDGER_RETENTION_INTERVAL: "5",
  }).retention;
  assert.deepEqual(set.default, {
    maxAgeMs: 30 * 86_400_000,
    maxCount: 10_000,
    maxBytes: 1024 ** 3,
  });
  assert.equal(set.intervalMs, 5000);
  assert.deepEqual(retentionFor(set, "chat/room"), { maxAgeMs: 12 * 3_600_000 });
  assert.deepEqual(retentionFor(set, "chat/vip/1"), {}, "the longest prefix wins");
  assert.deepEqual(retentionFor(set, "chatter"), set.default, "prefixes are segment-aware");
  assert.deepEqual(retentionFor(set, "telemetry"), { maxBytes: 512 * 1024 ** 2 });
  for (
    const [name, value] of [
      ["LEDGER_RETENTION", "age=30"],
      ["LEDGER_RETENTION", "count=0"],
      ["LEDGER_RETENTION", "keep=5"],
      ["LEDGER_RETENTION", "bytes=1GB"],
      ["LEDGER_RETENTION_RULES", "chat age=1d"],
      ["LEDGER_RETENTION_RULES", "a: count=1; a: count=2"],
      ["LEDGER_RETENTION_RULES", "../x: count=1"],
      ["LEDGER_RETENTION_INTERVAL", "0"],
    ]
  ) {
    assert.throws(
      () => loadFunnelConfig({ [name!]: value! }),
      (e) => e instanceof ConfigError && e.problems.some((p) => p.startsWith(name!)),
      `${name}=${value}`,
    );
  }
  assert.deepEqual(parseRetentionPolicy("forever"), {});
  assert.deepEqual(parseRetentionRules(" ; "), []);
});
