import assert from "node:assert/strict";
import { forwardFetches, type UpstreamFetch } from "../../src/relay/routing/fetch_forward.ts";

const NEVER = new AbortController().signal;
const t = (s: string) => new TextEncoder().encode(s);

/** An upstream whose answers the test releases by hand, counting what it was asked. */
function manualUpstream() {
  const asked: number[] = [];
  const open = new Map<number, { ok: () => void; fail: (e: Error) => void }>();
  let active = 0;
  let mostActive = 0;
  const fetch: UpstreamFetch = (_track, group) => {
    asked.push(group);
    active++;
    mostActive = Math.max(mostActive, active);
    return new Promise((resolve, reject) => {
      const settle = () => (active--, open.delete(group));
      open.set(group, {
        ok:
          () => (settle(),
            resolve({ sequence: group, frames: [t(`g${group}`)], exactTimestamp: 5n })),
        fail: (e) => (settle(), reject(e)),
      });
    });
  };
  return { fetch, asked, open, mostActive: () => mostActive };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("forwardFetches shares one upstream request per group and bounds those in flight", async () => {
  const up = manualUpstream();
  const fetchMissing = forwardFetches(() => up.fetch, "chat", { maxInflight: 2 });
  const same = [fetchMissing(7, NEVER), fetchMissing(7, NEVER), fetchMissing(7, NEVER)];
  const others = [fetchMissing(8, NEVER), fetchMissing(9, NEVER), fetchMissing(10, NEVER)];
  await tick();
  assert.deepEqual(up.asked, [7, 8], "one request for group 7, and at most two at once");
  up.open.get(7)!.ok();
  await tick();
  assert.deepEqual(up.asked, [7, 8, 9]);
  for (const answer of await Promise.all(same)) {
    assert.deepEqual(answer, { frames: [t("g7")], timestamp: 5n });
  }
  up.open.get(8)!.fail(new Error("not found upstream"));
  await tick();
  up.open.get(9)!.ok();
  await tick();
  up.open.get(10)!.ok();
  const [eight, nine, ten] = await Promise.all(others);
  assert.equal(eight, undefined, "an upstream refusal is 'not there'");
  assert.deepEqual(nine?.frames, [t("g9")]);
  assert.deepEqual(ten?.frames, [t("g10")]);
  assert.equal(up.mostActive(), 2);
  // Once answered, a group is asked for again (answers are passed on, not cached).
  const again = fetchMissing(7, NEVER);
  await tick();
  up.open.get(7)!.ok();
  assert.deepEqual((await again)?.frames, [t("g7")]);
  assert.deepEqual(up.asked, [7, 8, 9, 10, 7]);
});

Deno.test("forwardFetches: no route is 'not there'; a requester that leaves stops waiting", async () => {
  assert.equal(await forwardFetches(() => undefined, "chat")(1, NEVER), undefined);
  const up = manualUpstream();
  const fetchMissing = forwardFetches(() => up.fetch, "chat");
  const leaving = new AbortController();
  const left = fetchMissing(4, leaving.signal);
  const stays = fetchMissing(4, NEVER);
  await tick();
  leaving.abort();
  assert.equal(await left, undefined);
  up.open.get(4)!.ok();
  assert.deepEqual((await stays)?.frames, [t("g4")], "the shared request finished for the others");
  assert.deepEqual(up.asked, [4]);
});
