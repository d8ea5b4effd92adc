// Groups that arrive out of sequence order (each travels on its own stream,
// so a retransmitted one can land after newer ones) are taken, once, and
// reach every subscriber that has not skipped past them.
import assert from "node:assert/strict";
import { accept, type CachedGroup, connect, TrackProducer } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";

const t = (s: string) => new TextEncoder().encode(s);
const seqs = (groups: (CachedGroup | undefined)[]) => groups.map((g) => g?.sequence);

function drain(cursor: ReturnType<TrackProducer["cursor"]>): (number | undefined)[] {
  const out: (number | undefined)[] = [];
  for (let g = cursor.poll(); g; g = cursor.poll()) out.push(g.sequence);
  return out;
}

Deno.test("a late group reaches every cursor that has not passed it, once", () => {
  const track = new TrackProducer({ cache: 16 });
  track.writeGroup(1, t("1"));
  const early = track.cursor(1);
  track.writeGroup(2, t("2"));
  track.writeGroup(4, t("4"));
  assert.deepEqual(drain(early), [1, 2, 4]);
  // Joined at the latest (4): 3 is below where it asked to start.
  const atLatest = track.cursor();
  assert.equal(track.writeGroup(3, t("3")), true, "a late group is taken");
  assert.equal(track.lateWrites, 1);
  assert.deepEqual(drain(early), [3]);
  assert.deepEqual(drain(atLatest), [4]);
  // A duplicate (the same group retransmitted, or from a second route) is refused.
  assert.equal(track.writeGroup(3, t("3 again")), false);
  assert.equal(track.staleWrites, 1);
  assert.deepEqual(drain(early), []);
  assert.equal(track.latest, 4);
});

Deno.test("a late joiner gets the cached groups in sequence order; FETCH finds a late group", () => {
  const track = new TrackProducer({ cache: 8 });
  for (const s of [10, 12, 13, 11]) track.writeGroup(s, t(`${s}`));
  assert.deepEqual(drain(track.cursor(10)), [10, 11, 12, 13]);
  assert.deepEqual(drain(track.cursor(12)), [12, 13]);
  assert.equal(new TextDecoder().decode(track.group(11)?.frames[0]), "11");
});

Deno.test("a cursor behind by more than its queue skips to the latest, counting the skip", () => {
  const skipped: number[] = [];
  const delivered: number[] = [];
  let attached = 0;
  const track = new TrackProducer({
    cache: 64,
    observer: {
      attached: () => attached++,
      detached: () => attached--,
      delivered: (g) => delivered.push(g.sequence),
      skipped: (n) => skipped.push(n),
    },
  });
  track.writeGroup(0, t("0"));
  const c = track.cursor(undefined, 4);
  assert.equal(attached, 1);
  for (let s = 1; s <= 10; s++) track.writeGroup(s, t(`${s}`));
  assert.deepEqual(seqs([c.poll(), c.poll()]), [0, 10]);
  assert.deepEqual(skipped, [9]);
  assert.equal(c.skipped, 9);
  assert.deepEqual(delivered, [0, 10]);
  c.close();
  c.close();
  assert.equal(attached, 0, "closing twice detaches once");
});

Deno.test("a cursor that falls behind skips to the newest sequence, not the newest arrival", () => {
  const skipped: number[] = [];
  const track = new TrackProducer({ cache: 32, observer: { skipped: (n) => skipped.push(n) } });
  const c = track.cursor(1, 4);
  // 1..10, with 3 retransmitted and arriving last: ten pending, more than the queue (4).
  for (const s of [1, 2, 4, 5, 6, 7, 8, 9, 10, 3]) track.writeGroup(s, t(`${s}`));
  assert.deepEqual(drain(c), [10], "the newest sequence, and nothing below it after it");
  assert.equal(c.skipped, 9, "the nine pending groups passed over");
  assert.deepEqual(skipped, [9]);
  // Past the skip, the cursor keeps up again and takes late groups above its skip point.
  track.writeGroup(12, t("12"));
  track.writeGroup(11, t("11"));
  assert.deepEqual(drain(c), [12, 11]);
  assert.equal(c.skipped, 9);
});

Deno.test("a late group below a cursor's skip point is withheld and counted; below its start it is not counted", () => {
  const skipped: number[] = [];
  const track = new TrackProducer({ cache: 32, observer: { skipped: (n) => skipped.push(n) } });
  const c = track.cursor(2, 4);
  for (const s of [2, 4, 5, 6, 7, 8, 9, 10]) track.writeGroup(s, t(`${s}`));
  assert.deepEqual(drain(c), [10]);
  assert.equal(c.skipped, 7);
  track.writeGroup(3, t("3")); // below the skip point (10): withheld because of the skip
  track.writeGroup(1, t("1")); // below the start (2): never asked for
  track.writeGroup(11, t("11"));
  assert.deepEqual(drain(c), [11]);
  assert.equal(c.skipped, 8);
  assert.deepEqual(skipped, [7, 1]);
});

Deno.test("a cursor that fell out of the ring counts the evicted groups it missed, except those below its start", () => {
  const track = new TrackProducer({ cache: 2 });
  const c = track.cursor(5, 64);
  // 1 and 2 are below the start; 5..8 arrive; 3 is late and below it too.
  for (const s of [1, 5, 2, 6, 7, 3, 8]) track.writeGroup(s, t(`${s}`));
  assert.equal(track.cached, 2);
  assert.deepEqual(drain(c), [8], "the ring holds 3 and 8: the newest sequence is 8");
  assert.equal(c.skipped, 3, "5, 6 and 7 were evicted unread; 1, 2 and 3 were never asked for");
});

Deno.test("a backlog longer than the queue starts at the newest cached group", () => {
  const track = new TrackProducer({ cache: 32 });
  for (let s = 1; s <= 20; s++) track.writeGroup(s, t(`${s}`));
  const c = track.cursor(1, 4);
  assert.equal(c.skipped, 19);
  assert.deepEqual(drain(c), [20]);
});

for (const version of ["moq-lite-05", "moq-lite-04"]) {
  Deno.test(`${version}: a served subscription sends late groups and drops only what never came`, async () => {
    const track = new TrackProducer({ cache: 16 });
    track.writeGroup(1, t("1"));
    const pair = await quicPair(version);
    const serverP = accept(pair.server, {
      serve: () => track,
      lateGroupWaitMs: 100,
    });
    const client = await connect(pair.client);
    await serverP;
    const sub = client.subscribe("a/b", "t", { start: 1 });
    const it = sub[Symbol.asyncIterator]();
    const got = [(await it.next()).value?.sequence];
    track.writeGroup(3, t("3"));
    track.writeGroup(2, t("2")); // late, well within the wait
    track.writeGroup(5, t("5")); // 4 never comes
    track.writeGroup(6, t("6"));
    while (got.length < 5) got.push((await it.next()).value?.sequence);
    await sub.update({ end: 6 });
    assert.equal((await it.next()).done, true, "the subscription finishes at its end");
    assert.deepEqual(got.toSorted(), [1, 2, 3, 5, 6]);
    if (version === "moq-lite-05") assert.deepEqual(sub.drops, [[4, 4]]);
    await pair.stop();
  });
}
