// A short run of the network fuzzer, so it keeps working: hostile sessions
// against a real relay process while the healthy pair delivers every group.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const FUZZ = fileURLToPath(new URL("../../bench/fuzz.ts", import.meta.url));

/** Runs the fuzzer with `args` and returns its JSON report (asserting it exited 0). */
async function fuzz(args: string[]): Promise<Record<string, unknown> & FuzzReport> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", FUZZ, ...args, "--json"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const report = stdout.split("\n").find((l) => l.startsWith("{"));
  assert.ok(report, `${stdout}\n${new TextDecoder().decode(out.stderr)}`);
  const r = JSON.parse(report);
  assert.equal(r.crashes, 0);
  assert.equal(r.healthy.missing, 0, JSON.stringify(r.healthy));
  assert.ok(r.healthy.received > 0);
  assert.ok(r.hostile_inputs > 0);
  assert.equal(out.code, 0, stdout);
  return r;
}

interface FuzzReport {
  hostile_sessions: number;
  transports: Record<string, number>;
  actions: Record<string, number>;
  outcomes: Record<string, number>;
}

Deno.test("fuzz smoke: 40 hostile sessions, no crash, the healthy pair misses nothing", async () => {
  const r = await fuzz(["--sessions", "40", "--duration", "30", "--concurrency", "4"]);
  assert.equal(r.hostile_sessions, 40);
});

Deno.test("fuzz smoke: hostile WebSocket sessions, no crash, silent peers let go", async () => {
  const r = await fuzz([
    "--sessions",
    "60",
    "--duration",
    "30",
    "--concurrency",
    "6",
    "--seed",
    "5",
    "--transports",
    "websocket,websocket-frames",
  ]);
  assert.equal(r.hostile_sessions, 60);
  assert.deepEqual(Object.keys(r.transports).sort(), ["websocket", "websocket-frames"]);
  // Abuses below the session were answered with CONNECTION_CLOSE.
  assert.ok(Object.keys(r.outcomes).some((o) => o.startsWith("CONNECTION_CLOSE")));
  // A peer that never answers the server's close is dropped by the server.
  assert.equal(r.outcomes["silent peer still open after 5 s"], undefined, JSON.stringify(r));
});
