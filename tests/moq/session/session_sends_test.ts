/** A session's group bytes in flight across its subscriptions, and the bound its policy sets. */
import assert from "node:assert/strict";
import { SESSION_BYTES_IN_FLIGHT, SessionSends } from "../../../src/moq/session/session_sends.ts";

const MiB = 1 << 20;

Deno.test("session sends: past the default bound a group waits; one goes while none is in flight", async () => {
  const sends = new SessionSends();
  assert.equal(sends.full(2 * SESSION_BYTES_IN_FLIGHT), false, "nothing in flight: any group goes");
  sends.took(SESSION_BYTES_IN_FLIGHT - MiB);
  assert.equal(sends.full(MiB), false);
  assert.equal(sends.full(MiB + 1), true);
  const room = sends.room();
  sends.gave(MiB);
  await room;
  assert.equal(sends.full(MiB + 1), false);
});

Deno.test("session sends: a policy may lift the bound (a relay does for its peers)", () => {
  let limit: number | undefined = 10 * MiB;
  const sends = new SessionSends(() => limit);
  sends.took(10 * MiB);
  assert.equal(sends.full(1), true);
  limit = Infinity;
  assert.equal(sends.full(1024 * MiB), false);
});

Deno.test("session sends: past the bound only the oldest open stream of a growing group writes on", async () => {
  const sends = new SessionSends();
  const oldest = {};
  const newer = {};
  sends.opened(oldest);
  sends.opened(newer);
  sends.took(SESSION_BYTES_IN_FLIGHT);
  assert.equal(sends.mayWrite(newer, MiB), false, "the newer stream waits for room");
  assert.equal(sends.mayWrite(oldest, MiB), true, "the oldest writes on past the bound");
  // The oldest ended: the newer one is the oldest now, and whoever waited is woken.
  const room = sends.room();
  sends.closed(oldest);
  await room;
  assert.equal(sends.mayWrite(newer, MiB), true);
  sends.closed(newer);
  sends.gave(SESSION_BYTES_IN_FLIGHT);
  assert.equal(sends.bytes, 0);
});
