import assert from "node:assert/strict";
import { ConfigError } from "../../src/config/errors.ts";
import { loadFunnelConfig } from "../../src/config/funnel.ts";

Deno.test("LEDGER_OPEN_TRACKS: the backend's default when unset, a count for a file: ledger, refused otherwise", () => {
  assert.deepEqual(loadFunnelConfig({ LEDGER_URI: "file:data/ledger" }).ledger, {
    kind: "directory",
    dir: "data/ledger",
  });
  assert.deepEqual(
    loadFunnelConfig({ LEDGER_URI: "file:data/ledger", LEDGER_OPEN_TRACKS: "16" }).ledger,
    { kind: "directory", dir: "data/ledger", openTracks: 16 },
  );
  for (
    const env of [
      { LEDGER_URI: "file:data/ledger", LEDGER_OPEN_TRACKS: "0" },
      { LEDGER_URI: "file:data/ledger", LEDGER_OPEN_TRACKS: "many" },
      { LEDGER_OPEN_TRACKS: "16" },
    ]
  ) {
    assert.throws(
      () => loadFunnelConfig(env),
      (e) => e instanceof ConfigError && e.problems.some((p) => p.startsWith("LEDGER_OPEN_TRACKS")),
    );
  }
});
