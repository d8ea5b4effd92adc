// Shared by the crash tests of retention and compaction passes: a real process
// (_retention_child.ts) runs one pass over a ledger opened by its URI and is killed
// with SIGKILL at a moment the test picks; one test per durable backend of
// _backends.ts, over the storage its harness sets up.
import assert from "node:assert/strict";
import {
  Ledger,
  openBackend,
  parseLedgerUri,
  type StoreCredentials,
} from "../../src/ledger/mod.ts";
import { ignoreWithout } from "../support/requires.ts";
import { type BackendInstance, HARNESSES } from "./_backends.ts";

const CHILD = new URL("./_retention_child.ts", import.meta.url).pathname;
const CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** Where a crash test's ledger is: the URI a process opens it by, and its credentials. */
export interface CrashLedger {
  readonly uri: string;
  readonly credentials?: StoreCredentials;
}

/** Runs `f` over a ledger opened (and closed after) from `at`. */
export async function withLedger<T>(
  at: CrashLedger,
  f: (ledger: Ledger) => Promise<T>,
): Promise<T> {
  const ledger = new Ledger(await openBackend(parseLedgerUri(at.uri), at.credentials));
  try {
    return await f(ledger);
  } finally {
    await ledger.close();
  }
}

/** What the child's pass does: keep `count` records per track, or compact by `compact`. */
export interface PassPolicy {
  readonly count: number;
  readonly compact?: string;
}

/**
 * Starts a pass in a child process and SIGKILLs it `delayMs` after it first
 * prints `trigger` ("start" before the pass, "trimmed " or "compacted " after
 * a track). True when the kill landed, false when the pass finished first.
 */
export async function killDuringPass(
  at: CrashLedger,
  policy: PassPolicy,
  trigger: string,
  delayMs: number,
): Promise<boolean> {
  const config = {
    uri: at.uri,
    ...policy,
    ...(at.credentials ? { credentials: at.credentials } : {}),
  };
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--allow-all", `--config=${CONFIG}`, CHILD, JSON.stringify(config)],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let out = "";
  let armed = false;
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    out += decoder.decode(chunk, { stream: true });
    if (!armed && out.includes(trigger)) {
      armed = true;
      setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // Already exited: the pass finished first.
        }
      }, delayMs);
    }
  }
  const status = await child.status;
  assert.ok(armed, `the child never said "${trigger}": ${out} ${await stderr}`);
  return status.signal === "SIGKILL";
}

/**
 * Registers `name` once per backend a separate process can open (directory,
 * PostgreSQL when reachable, s3rver), each over fresh storage.
 */
export function crashTestPerBackend(
  name: string,
  body: (at: CrashLedger, backend: string, instance: BackendInstance) => Promise<void>,
): void {
  for (const harness of HARNESSES) {
    if (!["directory", "postgres", "s3"].includes(harness.name)) continue;
    const needs = harness.needs;
    Deno.test({
      name: `${name} (${harness.name})`,
      ignore: needs ? ignoreWithout(needs.service, needs.missing) : false,
      async fn() {
        const instance = await harness.setup();
        try {
          assert.ok(instance.uri, `${harness.name} has a URI`);
          const at = {
            uri: instance.uri,
            ...(instance.credentials ? { credentials: instance.credentials } : {}),
          };
          await body(at, harness.name, instance);
        } finally {
          await instance.cleanup();
        }
      },
    });
  }
}
