// The LISTEN heartbeat: heard back in time it keeps beating; unheard it reports the
// connection dead once; heartbeats of other processes are recognised and ignored.
import assert from "node:assert/strict";
import {
  HEARTBEAT_DEADLINE_MS,
  HEARTBEAT_MS,
  ListenHeartbeat,
} from "../../../src/ledger/postgres/heartbeat.ts";
import { ManualClock } from "../../support/manual_clock.ts";

function setup(): {
  clock: ManualClock;
  sent: string[];
  missed: () => number;
  beat: ListenHeartbeat;
} {
  const clock = new ManualClock();
  const sent: string[] = [];
  let missed = 0;
  const beat = new ListenHeartbeat({
    send: (payload) => {
      sent.push(payload);
      return Promise.resolve();
    },
    missed: () => missed++,
    timers: clock,
  });
  return { clock, sent, missed: () => missed, beat };
}

Deno.test("ledger heartbeat: heard back, it beats on; unheard, the connection is reported dead once", () => {
  const { clock, sent, missed, beat } = setup();
  beat.start();
  clock.advance(HEARTBEAT_MS);
  assert.equal(sent.length, 1);
  assert.equal(beat.heard(sent[0]!), true);
  clock.advance(HEARTBEAT_DEADLINE_MS);
  assert.equal(missed(), 0);
  clock.advance(HEARTBEAT_MS);
  assert.equal(sent.length, 2);
  clock.advance(HEARTBEAT_DEADLINE_MS);
  assert.equal(missed(), 1);
  clock.advance(10 * HEARTBEAT_MS);
  assert.equal(missed(), 1, "reported once, then stopped");
  assert.equal(sent.length, 2);
});

Deno.test("ledger heartbeat: another process's heartbeat is ignored and does not count as ours", () => {
  const { clock, sent, missed, beat } = setup();
  beat.start();
  clock.advance(HEARTBEAT_MS);
  assert.equal(beat.heard('{"h":"someone-else"}'), true);
  assert.equal(beat.heard('{"t":"room/one","l":3}'), false);
  clock.advance(HEARTBEAT_DEADLINE_MS);
  assert.equal(missed(), 1);
  assert.equal(sent.length, 1);
});

Deno.test("ledger heartbeat: stopped, it sends nothing and reports nothing", () => {
  const { clock, sent, missed, beat } = setup();
  beat.start();
  clock.advance(HEARTBEAT_MS);
  beat.stop();
  clock.advance(10 * HEARTBEAT_MS);
  assert.equal(sent.length, 1);
  assert.equal(missed(), 0);
});
