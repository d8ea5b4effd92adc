import assert from "node:assert/strict";
import {
  DeliveryTurns,
  MAX_BACKLOG_PAUSE_MS_PER_S,
  MAX_BACKLOG_PAUSES,
} from "../../../src/moq/session/delivery_turns.ts";
import { ManualClock } from "../../support/manual_clock.ts";

/** Turns driven by hand: `end()` ends the current event-loop turn. */
function manualTurns(budgetMs = 2) {
  const clock = new ManualClock();
  let pending: (() => void) | undefined;
  const turns = new DeliveryTurns({
    budgetMs,
    now: clock.now,
    afterTurn: (fn) => void (pending = fn),
  });
  const end = async (): Promise<void> => {
    const fn = pending;
    pending = undefined;
    fn?.();
    // Let resumed waiters run: a turn resumes them one after another, a microtask each.
    await new Promise((resolve) => setTimeout(resolve, 0));
  };
  return { clock, turns, end };
}

Deno.test("delivery turns: sending goes on while the turn is within its budget", () => {
  const { clock, turns } = manualTurns(2);
  for (let i = 0; i < 100; i++) assert.equal(turns.wait(), undefined);
  clock.advance(1.9);
  assert.equal(turns.wait(), undefined);
  assert.equal(turns.waiting, 0);
});

Deno.test("delivery turns: past the budget every loop waits, and they resume in the order they stopped", async () => {
  const { clock, turns, end } = manualTurns(2);
  assert.equal(turns.wait(), undefined);
  clock.advance(2);
  const order: string[] = [];
  for (const name of ["a", "b", "c"]) {
    const p = turns.wait();
    assert.ok(p, `${name} waits`);
    p.then(() => order.push(name));
  }
  assert.equal(turns.waiting, 3);
  assert.deepEqual(order, []);
  await end();
  assert.deepEqual(order, ["a", "b", "c"]);
  assert.equal(turns.waiting, 0);
  // A fresh turn: sending goes on again.
  assert.equal(turns.wait(), undefined);
});

Deno.test("delivery turns: a turn resumes waiters only while its budget lasts, the rest keep their place", async () => {
  // A turn that resumed every waiter at once would run as long as there are sessions: at a few
  // thousand, one group's fan-out held the event loop for hundreds of ms, and handshakes waited.
  const { clock, turns, end } = manualTurns(2);
  turns.wait();
  clock.advance(2);
  const order: string[] = [];
  for (const name of ["a", "b", "c", "d"]) {
    turns.wait()!.then(() => {
      order.push(name);
      clock.advance(1.5); // this waiter's sending
    });
  }
  await end();
  assert.deepEqual(order, ["a", "b"]);
  assert.equal(turns.waiting, 2);
  // A loop arriving now queues behind those still waiting.
  const late = turns.wait();
  assert.ok(late);
  late.then(() => order.push("late"));
  await end();
  assert.deepEqual(order, ["a", "b", "c", "d"]);
  await end();
  assert.deepEqual(order, ["a", "b", "c", "d", "late"]);
  assert.equal(turns.waiting, 0);
});

Deno.test("delivery turns: a loop arriving while others wait queues behind them even if time is left", async () => {
  const { clock, turns, end } = manualTurns(2);
  turns.wait();
  clock.advance(3);
  const first = turns.wait();
  assert.ok(first);
  await end();
  // New turn, but nobody waits: go.
  assert.equal(turns.wait(), undefined);
  clock.advance(2);
  const a = turns.wait();
  assert.ok(a);
  // The budget alone would not stop this one (no time passes), the queue does.
  const b = turns.wait();
  assert.ok(b);
  assert.equal(turns.waiting, 2);
});

Deno.test("delivery turns: with the default boundary, waiters resume on the next event-loop turn", async () => {
  let t = 0;
  const turns = new DeliveryTurns({ budgetMs: 1, now: () => t });
  assert.equal(turns.wait(), undefined);
  t = 5;
  const p = turns.wait();
  assert.ok(p);
  await p; // would hang if no turn boundary were scheduled
  assert.equal(turns.waiting, 0);
});

Deno.test("delivery turns: while the socket's receive buffer is filling, no turn starts until it is read", async () => {
  // A fan-out to 20 000 sessions brought their ACKs faster than the socket was read between
  // turns: the kernel dropped datagrams, and handshakes and SETUPs caught in it waited out QUIC's
  // backed-off timers for seconds. Past a quarter full, the waiting loops wait for the reading.
  const clock = new ManualClock();
  let pendingTurn: (() => void) | undefined;
  let pendingPause: (() => void) | undefined;
  const turns = new DeliveryTurns({
    now: clock.now,
    afterTurn: (fn) => void (pendingTurn = fn),
    pause: (fn) => void (pendingPause = fn),
  });
  let full = 0.5;
  turns.watchBacklog(() => full);
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
  turns.wait();
  clock.advance(2);
  let resumed = 0;
  for (let i = 0; i < 3; i++) turns.wait()!.then(() => resumed++);
  const turn = pendingTurn!;
  pendingTurn = undefined;
  turn();
  await settle();
  assert.equal(resumed, 0, "no loop resumes while the buffer is half full");
  assert.ok(pendingPause, "the turn waits for the socket to be read");
  assert.equal(pendingTurn, undefined);
  full = 0.1;
  const pause = pendingPause;
  pendingPause = undefined;
  pause();
  await settle();
  assert.equal(resumed, 3, "once read, the waiting loops resume");
});

Deno.test("delivery turns: a buffer that stays full slows the turns but cannot stop them", async () => {
  const clock = new ManualClock();
  let pendingTurn: (() => void) | undefined;
  let pauses = 0;
  let pendingPause: (() => void) | undefined;
  const turns = new DeliveryTurns({
    now: clock.now,
    afterTurn: (fn) => void (pendingTurn = fn),
    pause: (fn) => {
      pauses++;
      pendingPause = fn;
    },
  });
  turns.watchBacklog(() => 1);
  turns.wait();
  clock.advance(2);
  let resumed = false;
  turns.wait()!.then(() => (resumed = true));
  pendingTurn!();
  for (let i = 0; i < 100 && !resumed; i++) {
    const pause = pendingPause;
    pendingPause = undefined;
    pause?.();
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  assert.ok(resumed, "the waiting loop resumed");
  assert.equal(pauses, MAX_BACKLOG_PAUSES);
});

Deno.test("delivery turns: a buffer kept full (a flood anyone may send) takes at most a fifth of each second from delivery", async () => {
  // The socket's fill cannot tell the fan-out's own ACKs from junk sent to the port; without a
  // cap per second, twenty pauses of every turn left delivery a twentieth of its time.
  const clock = new ManualClock();
  let pendingTurn: (() => void) | undefined;
  let pendingPause: (() => void) | undefined;
  const turns = new DeliveryTurns({
    now: clock.now,
    afterTurn: (fn) => void (pendingTurn = fn),
    pause: (fn) => void (pendingPause = fn),
  });
  turns.watchBacklog(() => 1);
  const PAUSE_TAKES_MS = 2; // what a 1 ms timer took on a loaded host
  const SEND_MS = 0.5;
  let pausedMs = 0;
  let sends = 0;
  const start = clock.now();
  // One loop that always has a group to send, for 3 s of the clock.
  const loop = async () => {
    while (clock.now() - start < 3000) {
      const turn = turns.wait();
      if (turn) await turn;
      clock.advance(SEND_MS);
      sends++;
    }
  };
  let done = false;
  const running = loop().then(() => (done = true));
  while (!done) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (pendingPause) {
      const pause = pendingPause;
      pendingPause = undefined;
      clock.advance(PAUSE_TAKES_MS);
      pausedMs += PAUSE_TAKES_MS;
      pause();
    } else if (pendingTurn) {
      const turn = pendingTurn;
      pendingTurn = undefined;
      turn();
    }
  }
  await running;
  assert.ok(
    pausedMs <= 3 * (MAX_BACKLOG_PAUSE_MS_PER_S + PAUSE_TAKES_MS),
    `${pausedMs} ms of 3 000 paused`,
  );
  assert.ok(sends > 0);
});
