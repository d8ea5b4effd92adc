// Gap repair at any gap size: every group the ring can still take is asked for, a window at a
// time; what it cannot take is given up and counted, and no state is left behind.
import assert from "node:assert/strict";
import { type FetchedGroup, LiveFrames, TrackProducer } from "../../../src/moq/mod.ts";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import {
  GAP_REPAIR_WAIT_MS,
  GAP_REPAIR_WINDOW,
  GapRepair,
} from "../../../src/relay/routing/gap_repair.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { until } from "../../support/wait.ts";

const FRAME = [new Uint8Array([1])];

/** A FETCH the test answers by hand: `found` with the group (or one still arriving), or not found. */
interface Asked {
  readonly sequence: number;
  answer(found: boolean | LiveFrames): void;
}

function setup() {
  const clock = new ManualClock();
  const metrics = createRelayMetrics();
  const producer = new TrackProducer({ cache: 16, clock: clock.now });
  const logs: string[] = [];
  const asked: Asked[] = [];
  const pending = new Set<Asked>();
  const repair = new GapRepair({
    producer,
    fetchMissing: (sequence) =>
      new Promise<FetchedGroup | undefined>((resolve) => {
        const a: Asked = {
          sequence,
          answer: (found) => {
            pending.delete(a);
            const frames = found instanceof LiveFrames ? found : FRAME;
            resolve(found ? { frames, timestamp: 0 } : undefined);
          },
        };
        asked.push(a);
        pending.add(a);
      }),
    metrics,
    now: clock.now,
    timers: clock,
    label: "/b/t",
    log: (line) => logs.push(line),
  });
  // A group arriving live from the upstream, as the distributor hands it over.
  const live = (sequence: number): void => {
    producer.writeGroup(sequence, FRAME);
    repair.received(sequence, false);
  };
  return { clock, metrics, producer, logs, asked, pending, repair, live };
}

Deno.test("a gap of 3000 groups is fetched window by window, every group asked for once", async () => {
  const { clock, metrics, asked, pending, repair, live } = setup();
  live(0);
  live(3001);
  clock.advance(GAP_REPAIR_WAIT_MS);
  let most = 0;
  const done = (): boolean => metrics.groupRepairsTotal.value() === 3000;
  while (!done()) {
    await until(() => pending.size > 0 || done(), "the next FETCHes");
    most = Math.max(most, pending.size, repair.repairing);
    for (const a of [...pending]) a.answer(true);
  }
  const sequences = asked.map((a) => a.sequence).sort((a, b) => a - b);
  assert.deepEqual(sequences, Array.from({ length: 3000 }, (_, i) => i + 1), "each asked once");
  assert.ok(most <= GAP_REPAIR_WINDOW, `at most a window at once, saw ${most}`);
  // Three windows, each started by its lowest group alone (the probe).
  assert.deepEqual(asked.map((a) => a.sequence).filter((s) => s % GAP_REPAIR_WINDOW === 1), [
    1,
    1025,
    2049,
  ]);
  assert.equal(metrics.subscriberSkipsTotal.value(), 0, "nothing lost");
  assert.equal(repair.firstMissing, undefined);
  assert.equal(repair.repairing, 0);
});

Deno.test("a publisher jumping its sequence by 2^50 leaves bounded state and one counted hole", async () => {
  const { clock, metrics, producer, logs, asked, pending, repair, live } = setup();
  const top = 2 ** 50;
  live(0);
  live(top);
  const floor = producer.lateFloor;
  assert.equal(floor, top - 4095);
  // What the ring can no longer take is given up at once and said so.
  assert.ok(
    logs.some((l) => l.includes(`${floor - 1} group(s) in 1..${floor - 1} lost`)),
    logs.join("\n"),
  );
  // The rest (4095 groups) is asked for; this route finds none of them.
  let most = 0;
  for (let turn = 0; turn < 100 && (pending.size > 0 || clock.pending.length > 0); turn++) {
    await until(() => pending.size > 0 || clock.pending.length > 0, "a FETCH or a retry");
    most = Math.max(most, repair.repairing);
    for (const a of [...pending]) a.answer(false);
    await new Promise((r) => setTimeout(r, 0));
    if (pending.size === 0 && clock.pending.length > 0) clock.fireNext();
  }
  assert.ok(most <= GAP_REPAIR_WINDOW, `at most a window of state, saw ${most}`);
  assert.ok(asked.every((a) => a.sequence >= floor), "nothing below the floor asked for");
  assert.equal(asked[0]?.sequence, floor, "the lowest group the ring can take is asked for");
  // Four windows, each one's first group asked five times: no more requests than that.
  assert.equal(asked.length, 4 * 5);
  assert.ok(logs.some((l) => l.includes(`lost: no route could fetch them`)), logs.join("\n"));
  assert.equal(metrics.subscriberSkipsTotal.value(), 1, "one hole, counted once");
  assert.equal(repair.firstMissing, undefined);
  assert.equal(repair.repairing, 0);
  assert.deepEqual(clock.pending, []);
});

Deno.test("a repair answered after the track moved 4096 groups on is counted lost and forgotten", async () => {
  const { clock, metrics, logs, pending, repair, live } = setup();
  live(0);
  live(2);
  clock.advance(GAP_REPAIR_WAIT_MS);
  await until(() => pending.size === 1, "the FETCH of group 1");
  // The track moves on while the answer is on its way.
  for (let s = 3; s <= 5000; s++) live(s);
  for (const a of [...pending]) a.answer(true);
  await until(() => metrics.subscriberSkipsTotal.value() === 1, "group 1 to count as lost");
  assert.ok(logs.some((l) => l.includes("1 group(s) in 1..1 lost")), logs.join("\n"));
  assert.equal(
    metrics.groupRepairsTotal.value(),
    0,
    "a group the ring cannot take is not a repair",
  );
  assert.equal(repair.firstMissing, undefined, "nothing is left in the attempts");
  assert.equal(repair.repairing, 0);
});

Deno.test("a group waiting for its next attempt when the track moves 4096 on is counted lost", async () => {
  const { clock, metrics, logs, asked, pending, repair, live } = setup();
  live(0);
  live(2);
  clock.advance(GAP_REPAIR_WAIT_MS);
  await until(() => pending.size === 1, "the FETCH of group 1");
  for (const a of [...pending]) a.answer(false);
  await until(() => clock.pending.length > 0, "the retry to be set");
  for (let s = 3; s <= 5000; s++) live(s);
  clock.fireNext();
  await until(() => metrics.subscriberSkipsTotal.value() === 1, "group 1 to count as lost");
  assert.equal(asked.length, 1, "not asked for again once the ring cannot take it");
  assert.ok(logs.some((l) => l.includes("1 group(s) in 1..1 lost: the track moved")));
  assert.equal(repair.firstMissing, undefined);
  assert.equal(repair.repairing, 0);
});

Deno.test("a publisher leaving a hole after every group: bounded state and log, each hole asked at most 5 times", async () => {
  const { clock, metrics, logs, asked, pending, repair, live } = setup();
  // 20,000 groups with every other sequence missing; this route finds none of them.
  let most = 0;
  for (let s = 0; s <= 40_000; s += 2) {
    live(s);
    most = Math.max(most, repair.repairing, pending.size);
    if (s % 1000 === 0) {
      clock.advance(GAP_REPAIR_WAIT_MS);
      for (const a of [...pending]) a.answer(false);
      await new Promise((r) => setTimeout(r, 0));
    }
  }
  for (let turn = 0; turn < 100 && (pending.size > 0 || clock.pending.length > 0); turn++) {
    for (const a of [...pending]) a.answer(false);
    await new Promise((r) => setTimeout(r, 0));
    if (pending.size === 0 && clock.pending.length > 0) clock.fireNext();
  }
  assert.ok(most <= GAP_REPAIR_WINDOW, `at most a window of state, saw ${most}`);
  assert.equal(repair.repairing, 0);
  assert.equal(repair.firstMissing, undefined);
  // Each hole is lost (asked for through its window's first, or too old for the ring) and counted.
  assert.equal(metrics.subscriberSkipsTotal.value(), 20_000);
  const times = new Map<number, number>();
  for (const a of asked) times.set(a.sequence, (times.get(a.sequence) ?? 0) + 1);
  assert.ok(Math.max(...times.values()) <= 5, "no hole asked for more than five times");
  assert.ok(logs.length < 100, `${logs.length} log lines`);
});

Deno.test("one gap the route cannot fetch does not cost another gap repaired with it", async () => {
  const { clock, metrics, logs, pending, repair, live } = setup();
  // Two gaps open at the same moment, so their waits end together: 1..2 and 4..5.
  for (const s of [0, 3, 6]) live(s);
  clock.advance(GAP_REPAIR_WAIT_MS);
  for (let turn = 0; turn < 100 && (pending.size > 0 || clock.pending.length > 0); turn++) {
    await until(() => pending.size > 0 || clock.pending.length > 0, "a FETCH or a retry");
    for (const a of [...pending]) a.answer(a.sequence >= 4);
    await new Promise((r) => setTimeout(r, 0));
    if (pending.size === 0 && clock.pending.length > 0) clock.fireNext();
  }
  assert.equal(metrics.groupRepairsTotal.value(), 2, logs.join("\n"));
  assert.equal(metrics.subscriberSkipsTotal.value(), 1);
  assert.ok(logs.some((l) => l.includes("2 group(s) in 1..2 lost")), logs.join("\n"));
  assert.equal(repair.firstMissing, undefined);
});

Deno.test("an answer reset mid-way (its route's session ended) is a failed attempt: the group is asked for again and repaired whole", async () => {
  const { clock, metrics, producer, asked, pending, repair, live } = setup();
  live(0);
  live(2);
  clock.advance(GAP_REPAIR_WAIT_MS);
  await until(() => pending.size === 1, "the FETCH of group 1");
  const cut = new LiveFrames(0n);
  cut.push(new Uint8Array([1]));
  for (const a of [...pending]) a.answer(cut);
  await until(() => producer.group(1) !== undefined, "the answer in the ring");
  cut.reset();
  await until(() => clock.pending.length > 0, "the retry to be set");
  assert.equal(producer.holds(1), "missing", "an abandoned group is missing");
  assert.equal(repair.firstMissing, 1);
  assert.equal(metrics.groupRepairsTotal.value(), 0, "not a repair");
  clock.fireNext();
  await until(() => pending.size === 1, "the second FETCH of group 1");
  for (const a of [...pending]) a.answer(true);
  await until(() => metrics.groupRepairsTotal.value() === 1, "the repair");
  assert.deepEqual(asked.map((a) => a.sequence), [1, 1]);
  assert.equal(producer.holds(1), "written");
  assert.equal(producer.group(1)?.complete, true);
  assert.equal(metrics.subscriberSkipsTotal.value(), 0);
  assert.equal(repair.firstMissing, undefined);
});

Deno.test("a group the upstream abandoned mid-way is asked for at once", async () => {
  const { metrics, producer, pending, repair, live } = setup();
  live(0);
  const cut = new LiveFrames(0n);
  cut.push(new Uint8Array([1]));
  producer.writeGroup(1, cut);
  repair.received(1, false);
  live(2);
  cut.reset();
  repair.abandoned(1);
  assert.equal(repair.firstMissing, 1);
  await until(() => pending.size === 1, "the FETCH of group 1");
  for (const a of [...pending]) a.answer(true);
  await until(() => metrics.groupRepairsTotal.value() === 1, "the repair");
  assert.equal(producer.group(1)?.complete, true);
  assert.equal(repair.firstMissing, undefined);
});

Deno.test("an abandoned group whose partial arrival the ring dropped before its retry is still asked for again", async () => {
  const { clock, metrics, producer, asked, pending, repair, live } = setup();
  live(0);
  live(2);
  clock.advance(GAP_REPAIR_WAIT_MS);
  await until(() => pending.size === 1, "the FETCH of group 1");
  const cut = new LiveFrames(0n);
  cut.push(new Uint8Array([1]));
  for (const a of [...pending]) a.answer(cut);
  await until(() => producer.group(1) !== undefined, "the answer in the ring");
  cut.reset();
  await until(() => clock.pending.length > 0, "the retry to be set");
  // The track goes on past the ring's 16 groups before the retry: the partial group 1 leaves it.
  for (let s = 3; s < 3 + 20; s++) live(s);
  assert.equal(producer.group(1), undefined, "the partial arrival was dropped");
  // Group 1 was never written whole: it is still missing, and is asked for again.
  assert.equal(producer.holds(1), "missing", "a group never written whole is missing");
  clock.fireNext();
  await until(() => pending.size === 1 || asked.length > 1, "the second FETCH of group 1");
  for (const a of [...pending]) a.answer(true);
  await until(() => metrics.groupRepairsTotal.value() === 1, "the repair");
  assert.deepEqual(asked.map((a) => a.sequence), [1, 1]);
  assert.equal(producer.holds(1), "written");
  assert.equal(metrics.subscriberSkipsTotal.value(), 0);
  assert.equal(repair.firstMissing, undefined);
});
