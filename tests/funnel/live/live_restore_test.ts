// Restore: a restarted funnel publishes every recorded track with its latest
// record (memory backend kept across restarts proves the path; the directory
// ledger proves it for real), and a slow subscriber delays nobody.
import assert from "node:assert/strict";
import { MemoryBackend } from "../../../src/ledger/mod.ts";
import type { LedgerBackend } from "../../../src/ledger/mod.ts";
import { announcedPaths, dialOurs, stallable } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { withTempDir } from "../../support/temp_dir.ts";
import { until } from "../../support/wait.ts";
import { post, send, startLiveFunnel, take } from "../../support/live_funnel.ts";

async function restartScenario(
  env: Record<string, string>,
  backend: () => LedgerBackend | undefined,
): Promise<void> {
  let redactedGroup = "";
  {
    const b = backend();
    await using f = await startLiveFunnel(env, b ? { backend: b } : {});
    for (const body of ["1", "2", "3"]) await post(f.base, "room/1/chat", body);
    redactedGroup = (await post(f.base, "room/1/mod", '"bad"')).group;
    assert.equal(await send(f.base, "DELETE", `/tracks/room/1/mod?group=${redactedGroup}`), 201);
    assert.equal(await send(f.base, "PUT", "/tracks/room/2/empty"), 201);
  }
  const b = backend();
  await using f = await startLiveFunnel(env, b ? { backend: b } : {});
  const moq = await dialOurs(f.moqPort);
  try {
    const seen = await announcedPaths(moq, 2);
    assert.deepEqual(
      [...seen].sort(),
      ["room/1", "room/2"],
      "every recorded broadcast is announced",
    );

    const chat = moq.subscribe("room/1", "chat");
    assert.deepEqual(await take(chat, 1), [{ seq: 3, frame: '{"payload":3}' }]);
    const mod = moq.subscribe("room/1", "mod");
    assert.deepEqual(await take(mod, 1), [{ seq: 2, frame: `{"redacts":"${redactedGroup}"}` }]);
    // A created track with no record: the subscription waits for the first one.
    const empty = moq.subscribe("room/2", "empty");
    await empty.ready;
    await until(
      async () => await f.funnel.live.listener!.subscribers("room/2", "empty") === 1,
      "the waiting subscription",
    );
    await post(f.base, "room/2/empty", '"first"');
    assert.deepEqual(await take(empty, 1), [{ seq: 1, frame: '{"payload":"first"}' }]);
    await post(f.base, "room/1/chat", "4");
    assert.deepEqual(await take(chat, 1), [{ seq: 4, frame: '{"payload":4}' }]);
    await assert.rejects(moq.subscribe("room/1", "never").ready);
  } finally {
    moq.close(0, "");
  }
}

Deno.test("A restarted funnel (memory backend kept) publishes every recorded track with its latest record", async () => {
  using _q = quiet();
  const memory = new MemoryBackend();
  await restartScenario({}, () => memory);
});

Deno.test("A restarted funnel with a directory ledger publishes every recorded track with its latest record", async () => {
  using _q = quiet();
  await withTempDir((dir) => restartScenario({ LEDGER_URI: `file://${dir}` }, () => undefined));
});

Deno.test("A subscriber that stops reading for a while delays neither commits nor others, then gets every record", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  await send(f.base, "PUT", "/tracks/room/1/chat");
  const fast = await dialOurs(f.moqPort);
  let gate!: ReturnType<typeof stallable>;
  // Two concurrent group streams at most: a reader that stops accepting them stalls the sender.
  const stalled = await dialOurs(f.moqPort, {
    maxUni: 2,
    wrap: (s) => (gate = stallable(s)).session,
  });
  try {
    const fastSub = fast.subscribe("room/1", "chat");
    const stalledSub = stalled.subscribe("room/1", "chat");
    await Promise.all([fastSub.ready, stalledSub.ready]);
    await until(
      async () => await f.funnel.live.listener!.subscribers("room/1", "chat") === 2,
      "both subscriptions",
    );
    const fastIt = fastSub[Symbol.asyncIterator]();
    const stalledIt = stalledSub[Symbol.asyncIterator]();
    await post(f.base, "room/1/chat", "1");
    assert.equal((await fastIt.next()).value?.sequence, 1);
    assert.equal((await stalledIt.next()).value?.sequence, 1);

    gate.hold();
    const N = 200;
    for (let i = 2; i <= N; i++) {
      assert.equal((await post(f.base, "room/1/chat", String(i))).status, 201);
      const got = await fastIt.next();
      assert.equal(got.value?.sequence, i, "the fast subscriber gets every record in order");
    }
    gate.release();
    // Behind by far more than the track keeps in memory, but not slower than the track
    // (RECORD_LAG_MS): it is not skipped; what it missed is read back from the ledger.
    const stalledGot: number[] = [];
    while (stalledGot.at(-1) !== N) stalledGot.push((await stalledIt.next()).value!.sequence);
    assert.deepEqual(stalledGot, Array.from({ length: N - 1 }, (_, i) => i + 2), "every record");
    assert.equal(f.funnel.live.listener!.skips, 0);
  } finally {
    fast.close(0, "");
    stalled.close(0, "");
  }
});
