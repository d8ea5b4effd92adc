// A backend whose storage was away at startup: calls are unavailable until an attempt to
// open it succeeds (retried with backoff), then go to the opened backend.
import assert from "node:assert/strict";
import {
  LedgerError,
  type LedgerEvents,
  MemoryBackend,
  type TrackPath,
  waitForBackend,
} from "../../src/ledger/mod.ts";
import { ManualClock } from "../support/manual_clock.ts";
import { settled, until } from "../support/wait.ts";

const T: TrackPath = { broadcast: ["room"], track: "chat" };

Deno.test("waitForBackend: unavailable until the storage opens, then the opened backend", async () => {
  let attempts = 0;
  const errors: unknown[] = [];
  const memory = new MemoryBackend();
  const backend = waitForBackend(() => {
    attempts++;
    if (attempts < 3) return Promise.reject(new LedgerError("unavailable", "away"));
    return Promise.resolve(memory);
  }, { name: "postgres", shared: false, onError: (e) => errors.push(e) });
  try {
    assert.equal(backend.name, "postgres");
    assert.equal(backend.ready, false);
    await until(() => errors.length > 0, "a first failed attempt");
    await assert.rejects(
      backend.openTrack(T, true),
      (e) => e instanceof LedgerError && e.code === "unavailable" && /away/.test(e.message),
    );
    await assert.rejects(backend.listTracks(), LedgerError);
    await backend.opened;
    assert.equal(backend.ready, true);
    assert.equal(attempts, 3);
    assert.equal(errors.length, 2);
    assert.ok(await backend.openTrack(T, true));
    assert.deepEqual(await backend.listTracks(), [T]);
    assert.equal(backend.follow, undefined, "a backend that is not shared is not followed");
  } finally {
    await backend.close();
  }
});

Deno.test("waitForBackend: a shared backend is followed once open, before it is ready", async () => {
  const told: string[] = [];
  let followed: LedgerEvents | undefined;
  const memory = Object.assign(new MemoryBackend(), {
    follow: (events: LedgerEvents) => {
      followed = events;
      told.push("follow");
      return Promise.resolve(() => Promise.resolve());
    },
  });
  let away = true;
  const backend = waitForBackend(
    () => away ? Promise.reject(new LedgerError("unavailable", "away")) : Promise.resolve(memory),
    { name: "postgres", shared: true },
  );
  try {
    const events: LedgerEvents = { created: () => {}, committed: () => {}, resync: () => {} };
    const unfollow = await backend.follow!(events);
    assert.equal(followed, undefined);
    away = false;
    await backend.opened;
    assert.equal(followed, events, "the events given before it opened");
    assert.deepEqual(told, ["follow"]);
    await unfollow();
  } finally {
    await backend.close();
  }
});

Deno.test("waitForBackend: closed before the storage is reached, it stops trying", async () => {
  let attempts = 0;
  const clock = new ManualClock();
  const backend = waitForBackend(() => {
    attempts++;
    return Promise.reject(new LedgerError("unavailable", "away"));
  }, { name: "s3", shared: false, timers: clock });
  await until(() => clock.pending.length === 1, "a first attempt, and the wait for the next");
  assert.equal(attempts, 1);
  await backend.close();
  // Past every wait the backoff could take (10 s at most): no retry is left to fire.
  clock.advance(60_000);
  await settled();
  assert.equal(attempts, 1);
  assert.equal(backend.ready, false);
});
