// The campaign's checker and schedules on their own: a schedule replays from its
// JSON, and the invariant flags each way a record can go wrong.
import assert from "node:assert/strict";
import { targetsOf } from "./faults.ts";
import { allDelivered, checkInvariant, type Evidence } from "./invariant.ts";
import { RawSubscription } from "./observers.ts";
import type { RawSubscriber } from "./observers.ts";
import { drawSchedule, formatSchedule, parseSchedule } from "./schedule.ts";
import { recordBody } from "./workload.ts";

const group = (seq: number) => `e000001-g${String(seq).padStart(8, "0")}`;

function evidence(n: number): Evidence & { sub: RawSubscription } {
  const acked = Array.from({ length: n }, (_, seq) => {
    const body = recordBody(`r${seq}`, 3);
    return { key: `r${seq}`, group: group(seq), seq, body };
  });
  const records = acked.map((a) => ({ group: a.group, payload: JSON.parse(a.body) }));
  const sub = new RawSubscription();
  sub.first = 1;
  for (const a of acked) sub.got.set(a.seq + 1, JSON.stringify({ payload: JSON.parse(a.body) }));
  return {
    sub,
    acked,
    streamAcked: [],
    histories: [records, records],
    streamHistories: [],
    raw: [{ name: "raw-1", subscriptions: [sub] } as unknown as RawSubscriber],
    feed: { records, gaps: [] },
    streamRead: undefined,
    crashes: [],
  };
}

Deno.test("the invariant holds when everything arrived once, where acknowledged", () => {
  const c = checkInvariant(evidence(10));
  assert.deepEqual(c.violations, []);
  assert.equal(c.records, 10);
  assert.equal(c.rawJudged, 1);
});

Deno.test("the invariant flags a record missing at a raw subscriber, in history, or at the feed", () => {
  const e = evidence(10);
  e.sub.got.delete(6);
  assert.match(checkInvariant(e).violations[0]!.what, /raw @moq\/net subscriber raw-1/);

  const moved = evidence(10);
  const history = [...moved.histories[1]!];
  history[4] = { group: group(9), payload: history[4]!.payload };
  const c = checkInvariant({ ...moved, histories: [moved.histories[0]!, history] });
  assert.deepEqual(c.violations.map((v) => v.what), [
    "record: in funnel-1's history at another position or with other content",
  ]);

  const fed = evidence(10);
  const records = fed.feed.records.filter((r) => r.group !== group(3));
  assert.equal(
    checkInvariant({ ...fed, feed: { records, gaps: [] } }).violations[0]!.what,
    "client feed missed acknowledged records without a gap event",
  );
  // Reported as a gap, the skip is counted instead.
  const gapped = checkInvariant({
    ...fed,
    feed: { records, gaps: [{ from: group(3), to: group(3) }] },
  });
  assert.deepEqual(gapped.violations, []);
  assert.equal(gapped.feedGapRecords, 1);
});

Deno.test("a subscription that ended is not judged, and a crash is a violation", () => {
  const e = evidence(5);
  e.sub.got.clear();
  e.sub.ended = "relay-a was killed";
  const c = checkInvariant({ ...e, crashes: ["funnel-0 exited by itself"] });
  assert.equal(c.rawJudged, 0);
  assert.equal(c.rawEnded, 1);
  assert.deepEqual(c.violations.map((v) => v.what), ["a process exited by itself"]);
});

Deno.test("a schedule is drawn from its seed alone and replays from its JSON", () => {
  const options = { seed: 42, durationMs: 12_000 };
  const a = drawSchedule(options, targetsOf);
  assert.deepEqual(drawSchedule(options, targetsOf), a);
  assert.deepEqual(parseSchedule(formatSchedule(a)), a);
  assert.notDeepEqual(drawSchedule({ ...options, seed: 43 }, targetsOf), a);
  assert.throws(() => parseSchedule("{"), SyntaxError);
  assert.throws(() => parseSchedule('{"seed":1}'), TypeError);
  assert.throws(
    () => parseSchedule(formatSchedule({ ...a, scenario: "nowhere" })),
    RangeError,
  );
  assert.equal(drawSchedule({ ...options, maxBurst: 0 }, targetsOf).bursts.length, 0);
});

Deno.test("the wait for delivery ends once each acknowledged append is read, not as many appends", () => {
  const e = evidence(3);
  const raw = [{ name: "raw-1", current: () => e.sub } as unknown as RawSubscriber];
  const append = (k: string) => JSON.stringify({ k });
  // s1 was committed but never answered (its funnel was SIGKILLed first); s2 was acknowledged.
  const streamAcked = [
    { key: "s0", position: 1, body: append("s0") },
    { key: "s2", position: 3, body: append("s2") },
  ];
  const arrived = { ...e, raw, streamAcked, streamRead: [append("s0"), append("s1")] };
  assert.equal(allDelivered(arrived), false);
  assert.equal(
    allDelivered({ ...arrived, streamRead: [...arrived.streamRead, append("s2")] }),
    true,
  );
});
