// Crash safety: a real child process appends from concurrent callers and is killed
// with SIGKILL at a random moment; after reopening, every acknowledged record is
// present exactly once, in order, and nothing is half-visible.
import assert from "node:assert/strict";
import type { StoreCredentials } from "../../src/ledger/mod.ts";
import { type Ack, crashTestsPerBackend, WORKERS } from "../support/crash.ts";

const CHILD = new URL("./_crash_child.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** Runs the child until it has acknowledged `killAfter` records, then SIGKILLs it. */
async function runAndKill(
  uri: string,
  run: number,
  killAfter: number,
  credentials?: StoreCredentials,
): Promise<Ack[]> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--allow-all",
      `--config=${CONFIG}`,
      CHILD,
      JSON.stringify({ uri, run, workers: WORKERS, ...(credentials ? { credentials } : {}) }),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const acks: Ack[] = [];
  let killed = false;
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      const match = /^ack (\d+) (.*)$/.exec(line);
      if (match) acks.push({ seq: Number(match[1]), payload: match[2]! });
    }
    if (!killed && acks.length >= killAfter) {
      child.kill("SIGKILL");
      killed = true;
    }
  }
  const status = await child.status;
  const errors = await stderr;
  assert.ok(killed, `child exited before it was killed (code ${status.code}): ${errors}`);
  assert.equal(status.signal, "SIGKILL");
  return acks;
}

await crashTestsPerBackend({
  directory: "ledger directory: kill -9 during concurrent appends loses no acknowledged record",
  postgres: "ledger postgres: kill -9 during concurrent appends loses no acknowledged record",
  s3: "ledger s3: kill -9 during concurrent appends loses no acknowledged record",
}, runAndKill);
