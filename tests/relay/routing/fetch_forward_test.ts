import assert from "node:assert/strict";
import { LiveFrames } from "../../../src/moq/mod.ts";
import { STORAGE_DEADLINE_MS } from "../../../src/ledger/mod.ts";
import {
  FETCH_FORWARD_TIMEOUT_MS,
  forwardFetches,
  type UpstreamFetch,
} from "../../../src/relay/routing/fetch_forward.ts";
import { ended } from "../../../src/relay/routing/upstream_track.ts";
import { ManualClock } from "../../support/manual_clock.ts";

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

Deno.test("forwardFetches passes on a group still arriving, shares it and holds its place until it ends", async () => {
  const groups = new Map<number, LiveFrames>();
  const asked: [number, boolean | undefined][] = [];
  const signals: AbortSignal[] = [];
  const fetch: UpstreamFetch = (_track, group, options) => {
    asked.push([group, options.partial]);
    if (options.signal) signals.push(options.signal);
    const live = new LiveFrames(5n);
    live.push(t(`g${group} f1`));
    groups.set(group, live);
    return Promise.resolve({ sequence: group, frames: live.frames, live, exactTimestamp: 5n });
  };
  // A short deadline, so that the quiet upstream below is given up on without the shipped 10 s.
  const fetchMissing = forwardFetches(() => fetch, "video", { maxInflight: 1, timeoutMs: 200 });
  const got = await fetchMissing(3, NEVER);
  assert.deepEqual(asked, [[3, true]], "asked for the group from its first frame");
  assert.equal(got?.frames, groups.get(3), "passed on at its first frame");
  assert.equal(got?.timestamp, 5n);
  // While it arrives, another requester shares it, and another group waits for the one place.
  assert.equal((await fetchMissing(3, NEVER))?.frames, groups.get(3));
  const other = fetchMissing(4, NEVER);
  await tick();
  assert.deepEqual(asked, [[3, true]]);
  groups.get(3)!.push(t("g3 f2"));
  groups.get(3)!.finish();
  assert.equal((await other)?.frames, groups.get(4), "its place came free when it ended");
  // An upstream that then sends nothing for the deadline is cancelled, and the group reset.
  await ended(groups.get(4)!);
  assert.equal(groups.get(4)!.state, "reset");
  assert.equal(signals[1]?.aborted, true);
  assert.equal(signals[0]?.aborted, false, "a group that ended is not cancelled");
});

Deno.test("forwardFetches at its shipped deadline waits out a funnel's slowest good ledger read", async () => {
  // The shipped deadline; only the clock is the test's.
  const clock = new ManualClock();
  const up = manualUpstream();
  const fetchMissing = forwardFetches(() => up.fetch, "chat", { timers: clock });
  // A funnel whose ledger read takes just under its own storage deadline still answers.
  const slow = fetchMissing(1, NEVER);
  await tick();
  clock.advance(STORAGE_DEADLINE_MS + 500);
  up.open.get(1)!.ok();
  assert.deepEqual((await slow)?.frames, [t("g1")], "a slow but good answer is passed on");
  // One that never answers is given up on at the deadline, not before.
  let settled = false;
  const silent = fetchMissing(2, NEVER).finally(() => (settled = true));
  await tick();
  clock.advance(FETCH_FORWARD_TIMEOUT_MS - 1);
  await tick();
  assert.equal(settled, false);
  clock.advance(1);
  assert.equal(await silent, undefined, "not there after the deadline");
});
