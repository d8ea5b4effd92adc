// A short run of the network fuzzer, so it keeps working: hostile sessions
// against a real relay process while the healthy pair delivers every group.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const FUZZ = fileURLToPath(new URL("../../bench/fuzz.ts", import.meta.url));

Deno.test("fuzz smoke: 40 hostile sessions, no crash, the healthy pair misses nothing", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      FUZZ,
      "--sessions",
      "40",
      "--duration",
      "30",
      "--concurrency",
      "4",
      "--json",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const report = stdout.split("\n").find((l) => l.startsWith("{"));
  assert.ok(report, `${stdout}\n${new TextDecoder().decode(out.stderr)}`);
  const r = JSON.parse(report);
  assert.equal(r.crashes, 0);
  assert.equal(r.hostile_sessions, 40);
  assert.ok(r.hostile_inputs > 0);
  assert.equal(r.healthy.missing, 0, JSON.stringify(r.healthy));
  assert.ok(r.healthy.received > 0);
  assert.equal(out.code, 0, stdout);
});
