import assert from "node:assert/strict";
import { testCertificateFiles } from "./certs.ts";
import { shippedFlags } from "./shipped_flags.ts";
import { spawnServer, startServer } from "./processes.ts";
import { until, within } from "./wait.ts";

/** The process state letter of `pid` (R, S, T for stopped...), from /proc (Linux). */
function state(pid: number): string {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
}

Deno.test({
  name:
    "startServer runs the relay itself with its shipped permissions; SIGSTOP, SIGCONT and SIGKILL reach it",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const files = await testCertificateFiles();
    const p = await startServer("relay", {
      env: { RELAY_ADDR: "127.0.0.1:0", CERT_FILE: files.cert, KEY_FILE: files.key },
    });
    try {
      const argv = Deno.readTextFileSync(`/proc/${p.pid}/cmdline`).split("\0").filter((a) => a);
      assert.ok(argv.at(-2)?.endsWith("src/cli.ts") && argv.at(-1) === "relay", argv.join(" "));
      for (const flag of shippedFlags("relay")) assert.ok(argv.includes(flag), flag);
      assert.ok(!argv.includes("-A"), argv.join(" "));
      assert.ok(p.signal("SIGSTOP"));
      await p.waitForLine("relay: listening"); // printed already: no wait on a stopped process
      for (let i = 0; state(p.pid) !== "T"; i++) assert.ok(i < 1000, "stopped");
      assert.ok(p.signal("SIGCONT"));
      const status = await p.kill();
      assert.equal(status.signal, "SIGKILL");
      assert.equal(p.exited(), true);
      assert.equal(p.signal("SIGTERM"), false, "a signal to a process gone reports it");
    } finally {
      await p.kill();
      await Deno.remove(files.dir, { recursive: true });
    }
  },
});

Deno.test("a wait for a line the server never prints fails when it exits, with its output", async () => {
  const p = spawnServer("relay", { env: { GROUP_CACHE_SIZE: "lots" } });
  await assert.rejects(
    p.ready(),
    /ended before printing[\s\S]*GROUP_CACHE_SIZE must be an integer/,
  );
  assert.equal((await p.finished()).code, 2);
});

Deno.test({
  name:
    "a relay that re-executed itself for V8 flags is stopped and killed whole, leaving no orphan",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const files = await testCertificateFiles();
    const env = {
      RELAY_ADDR: "127.0.0.1:0",
      CERT_FILE: files.cert,
      KEY_FILE: files.key,
      RELAY_SEMI_SPACE_MB: "16",
    };
    const p = await startServer("relay", { env });
    try {
      const own = p.serverPid();
      assert.notEqual(own, p.pid, "the relay restarted itself as a child");
      assert.ok(p.signal("SIGSTOP"));
      await until(() => state(own) === "T", "the server itself to stop");
      assert.ok(p.signal("SIGCONT"));
      // An orphaned child would hold the output pipes open: the kill would never finish.
      await within(p.kill(), 20_000, "the kill of the relay and its re-executed child");
      await until(
        () => !existsProc(own) || state(own) === "Z",
        `the re-executed relay ${own} to end`,
      );
    } finally {
      await p.kill();
      await Deno.remove(files.dir, { recursive: true });
    }
  },
});

function existsProc(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}
