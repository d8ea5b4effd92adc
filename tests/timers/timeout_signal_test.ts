import assert from "node:assert/strict";
import { timeoutSignal } from "../../src/timers/mod.ts";
import { ManualClock } from "../support/manual_clock.ts";
import { within } from "../support/wait.ts";

Deno.test("timeoutSignal aborts on the injected timers, with AbortSignal.timeout's reason", async () => {
  const clock = new ManualClock();
  const signal = timeoutSignal(500, clock);
  assert.deepEqual(clock.pending, [500]);
  clock.advance(499);
  assert.equal(signal.aborted, false);
  clock.advance(1);
  assert.equal(signal.aborted, true);
  assert.ok(signal.reason instanceof DOMException);
  const builtIn = AbortSignal.timeout(0);
  await new Promise((resolve) => builtIn.addEventListener("abort", resolve, { once: true }));
  assert.equal(signal.reason.name, "TimeoutError");
  assert.equal(signal.reason.name, (builtIn.reason as DOMException).name);
  assert.equal(signal.reason.message, (builtIn.reason as DOMException).message);
});

Deno.test("timeoutSignal on the system timers does not keep the process alive", async () => {
  // A day-long timeout: a process it held would not end before `within` gives up.
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { timeoutSignal } from "${new URL("../../src/timers/mod.ts", import.meta.url)}";
       timeoutSignal(86_400_000);`,
    ],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    const { code } = await within(child.status, 30_000, "the process to end");
    assert.equal(code, 0);
  } finally {
    try {
      child.kill();
    } catch {
      // already ended
    }
    await child.stderr.cancel();
  }
});
