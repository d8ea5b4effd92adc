// Two funnel processes on one directory ledger, run with exactly the permissions deno.json's
// `funnel` task ships (not -A): the second refuses to start while the first lives, so no
// acknowledged record is numbered over; once the first is SIGKILLed the second takes over.
import assert from "node:assert/strict";
import { type ShippedFunnel, startShippedFunnel } from "../support/shipped_funnel.ts";
import { withTempDir } from "../support/temp_dir.ts";
import { fullHistory } from "./_replicas.ts";

const TRACK = "lock/records";

/** POSTs one record; the payload text when answered 201. */
async function post(base: string, text: string): Promise<string | undefined> {
  const response = await fetch(`${base}/tracks/${TRACK}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ text }),
  });
  await response.body?.cancel();
  return response.status === 201 ? text : undefined;
}

Deno.test("directory ledger, shipped permissions: a second funnel is refused while the first lives, and takes over after SIGKILL", async () => {
  await withTempDir(async (dir) => {
    const ledger = `file://${dir}/ledger`;
    const started: ShippedFunnel[] = [];
    try {
      const first = await startShippedFunnel(ledger);
      started.push(first);
      assert.ok(first.base, `the first funnel started:\n${first.process.lines.join("\n")}`);
      const acked: string[] = [];
      for (let i = 0; i < 3; i++) acked.push((await post(first.base, `first-${i}`))!);

      const second = await startShippedFunnel(ledger);
      started.push(second);
      // Whatever the second did, every record either one acknowledged must stay in history.
      for (let i = 0; i < 3; i++) {
        for (const [name, base] of [["first", first.base], ["second", second.base]] as const) {
          const text = base && await post(base, `${name}-more-${i}`);
          if (text) acked.push(text);
        }
      }
      const refused = second.process.lines.join("\n");
      await second.kill();
      await first.kill();

      const third = await startShippedFunnel(ledger);
      started.push(third);
      assert.ok(third.base, `the funnel after SIGKILL started:\n${third.process.lines.join("\n")}`);
      const taken = await post(third.base, "third");
      assert.equal(taken, "third", "the funnel that took over accepts records");
      acked.push(taken);
      const stored = (await fullHistory(third.base, TRACK)).map((r) =>
        (r.payload as { text: string }).text
      );
      assert.deepEqual(stored.toSorted(), acked.toSorted(), "every acknowledged record is stored");

      assert.equal(second.base, undefined, "the second funnel did not start");
      assert.notEqual((await second.process.child.status).code, 0);
      assert.match(refused, new RegExp(`in use by process ${first.process.child.pid}`));
    } finally {
      for (const funnel of started) await funnel.kill();
    }
  });
});
