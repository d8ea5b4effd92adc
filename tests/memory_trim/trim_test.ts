import assert from "node:assert/strict";
import { glibcTrim, startMemoryTrimmer } from "../../src/memory_trim/mod.ts";
import { ManualClock } from "../support/manual_clock.ts";

Deno.test("memory trim: once a burst of sessions has ended, and not during steady churn", async () => {
  const timers = new ManualClock();
  let trims = 0;
  const trimmer = startMemoryTrimmer({ timers, minDrop: 3, trim: () => (trims++, true) });
  const sessions = Array.from({ length: 5 }, () => Promise.withResolvers<void>());
  for (const s of sessions) trimmer.track({ closed: s.promise });
  timers.fireNext();
  assert.equal(trims, 0, "no trim while the burst is open");
  // Steady churn: one leaves, one arrives.
  sessions[0]!.resolve();
  const replacement = Promise.withResolvers<void>();
  trimmer.track({ closed: replacement.promise });
  await Promise.resolve();
  timers.fireNext();
  assert.equal(trims, 0, "churn at a constant count does not trim");
  // The burst ends: three more leave (one by failing).
  sessions[1]!.resolve();
  sessions[2]!.resolve();
  sessions[3]!.reject(new Error("reset"));
  await new Promise((r) => setTimeout(r, 0));
  timers.fireNext();
  assert.equal(trims, 0, "not while sessions are still ending");
  timers.fireNext();
  assert.equal(trims, 1);
  timers.fireNext();
  assert.equal(trims, 1, "one trim per burst");
  trimmer.stop();
});

Deno.test("memory trim: glibc's malloc_trim is reached when FFI is allowed on Linux", () => {
  const trim = glibcTrim();
  if (Deno.build.os !== "linux") return;
  assert.ok(trim, "no malloc_trim: is libc glibc, and the test run with --allow-ffi?");
  assert.equal(typeof trim(), "boolean");
});
