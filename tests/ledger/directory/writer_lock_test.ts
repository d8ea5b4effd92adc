// The directory ledger takes one writing process: a second process on the same directory
// refuses to start and names the first; the lock of a killed process is free at once.
// (tests/funnel/directory_writer_lock_test.ts runs the same with the shipped permissions.)
import assert from "node:assert/strict";
import { DirectoryBackend } from "../../../src/ledger/mod.ts";

const MOD = new URL("../../../src/ledger/mod.ts", import.meta.url).href;

Deno.test("directory ledger: a second process is refused with the first one's pid; a dead one's lock is taken over", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-lock-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `const { DirectoryBackend } = await import(${JSON.stringify(MOD)});
       await DirectoryBackend.open(${JSON.stringify(dir)});
       console.log("open");
       setInterval(() => {}, 1000);`,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    assert.match((await reader.read()).value ?? "", /open/);
    await assert.rejects(
      DirectoryBackend.open(dir),
      (e: Error) => e.message.includes(`in use by process ${child.pid}`),
    );
    child.kill("SIGKILL");
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    // Its lock file stays behind, naming it; the kernel dropped its lock with the process.
    const backend = await DirectoryBackend.open(dir);
    const again = await DirectoryBackend.open(dir); // the same process may open it twice
    await again.close();
    await backend.close();
    // The file is kept (removing it would let two processes lock two files of one name).
    assert.match(await Deno.readTextFile(`${dir}/writer.lock`), new RegExp(`"pid":${Deno.pid}`));
    await (await DirectoryBackend.open(dir)).close();
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // gone
    }
    await Deno.remove(dir, { recursive: true });
  }
});
