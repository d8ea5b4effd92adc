// A SUBSCRIBE for a track that is not open asks the ledger whether it exists. An anonymous
// client looping SUBSCRIBEs for a missing track, on the own listener (moq-lite and IETF) or
// through the relay session, costs one storage lookup, not one per request; once the track is
// created, a subscription to it succeeds at once.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { type LedgerBackend, MemoryBackend, trackKey } from "../../../src/ledger/mod.ts";
import { TrackProducer } from "../../../src/moq/mod.ts";
import { dialNetIetf, dialOurs } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { within } from "../../support/wait.ts";
import { post, startLiveFunnel, take } from "../../support/live_funnel.ts";

/** A memory backend counting the lookups (opens without create) of each track. */
function countingLookups(): { backend: LedgerBackend; lookups: Map<string, number> } {
  const inner = new MemoryBackend();
  const lookups = new Map<string, number>();
  return {
    lookups,
    backend: {
      name: inner.name,
      listTracks: () => inner.listTracks(),
      close: () => inner.close(),
      openTrack: (path, create) => {
        if (!create) lookups.set(trackKey(path), (lookups.get(trackKey(path)) ?? 0) + 1);
        return inner.openTrack(path, create);
      },
    },
  };
}

const N = 20;

Deno.test("N SUBSCRIBEs for a missing track, moq-lite, IETF and through the relay session, make one storage lookup; once created, a SUBSCRIBE succeeds at once", async () => {
  using _q = quiet();
  const { backend, lookups } = countingLookups();
  await using f = await startLiveFunnel({}, { backend });
  const { publisher } = f.funnel.live;
  const lite = await dialOurs(f.moqPort);
  const ietf = await dialNetIetf(f.moqPort, 20);
  try {
    // At once, then one after another.
    await Promise.all(
      Array.from({ length: N }, () => assert.rejects(lite.subscribe("nowhere", "t").ready)),
    );
    for (let i = 0; i < N; i++) await assert.rejects(lite.subscribe("nowhere", "t").ready);
    // A few only: @moq/net writes a line for each refusal.
    for (let i = 0; i < 3; i++) {
      const sub = ietf.consume(Net.Path.from("nowhere")).track("t").subscribe({});
      assert.equal(
        await within(sub.recvGroup().catch(() => undefined), 10_000, "the refusal"),
        undefined,
      );
    }
    for (let i = 0; i < N; i++) {
      assert.equal(
        await publisher.serve({ kind: "subscribe", path: "nowhere", track: "t" }),
        "not_found",
      );
    }
    assert.equal(lookups.get("nowhere/t"), 1, "one storage lookup for all of them");

    assert.equal((await post(f.base, "nowhere/t", "1")).status, 201);
    assert.deepEqual(await take(lite.subscribe("nowhere", "t"), 1), [
      { seq: 1, frame: '{"payload":1}' },
    ]);
    assert.ok(
      await publisher.serve({ kind: "subscribe", path: "nowhere", track: "t" }) instanceof
        TrackProducer,
    );
  } finally {
    lite.close(0, "");
    ietf.close();
  }
});
