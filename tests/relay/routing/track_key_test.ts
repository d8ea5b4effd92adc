// The relay's pending work per track is keyed by one typed, bounded key.
import assert from "node:assert/strict";
import { codec } from "../../../src/moq/mod.ts";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import { RelayCore } from "../../../src/relay/routing/relay_core.ts";
import { SubscribeError } from "../../../src/relay/routing/upstream_request.ts";
import { trackKey } from "../../../src/relay/routing/track_key.ts";
import { FakeSource } from "./_fake_source.ts";

Deno.test("a track key tells apart every (path, track) pair", () => {
  assert.notEqual(trackKey("a/b", "c"), trackKey("a", "b/c"));
  assert.notEqual(trackKey("ab", "c"), trackKey("a", "bc"));
  assert.notEqual(trackKey("", "1:x"), trackKey("1:x", ""));
  assert.equal(trackKey("room/1", "chat"), trackKey("room/1", "chat"));
});

Deno.test("a name longer than the wire allows makes no key", () => {
  const long = "x".repeat(codec.MAX_NAME + 1);
  assert.throws(() => trackKey("room", long), RangeError);
  assert.throws(() => trackKey(long, "chat"), RangeError);
  // Counted in UTF-8 bytes: 1366 three-byte characters are 4098 bytes.
  assert.throws(() => trackKey("room", "€".repeat(1366)), /longer than 4096 bytes/);
  assert.ok(trackKey("room", "x".repeat(codec.MAX_NAME)));
  assert.ok(trackKey("room", "€".repeat(1365)));
});

Deno.test("the relay refuses a track name longer than the wire allows, asking nothing upstream", async () => {
  const metrics = createRelayMetrics();
  const core = new RelayCore({ metrics, cacheSize: 8, now: () => 0, idleMs: 0, orphanMs: 0 });
  const src = new FakeSource();
  const ann = core.routes.announce("room", src);
  await assert.rejects(
    core.source("room", "x".repeat(codec.MAX_NAME + 1)),
    (e: unknown) => e instanceof SubscribeError && e.code === "not_found",
  );
  assert.deepEqual(src.subscribes, []);
  assert.equal(metrics.subscribeErrorsTotal.value({ code: "not_found" }), 1);
  ann.end();
  core.close();
});
