// IETF TRACK_STATUS asks the funnel's publisher for a track as a SUBSCRIBE does, but no cursor
// ever attaches: it must not pin the track it reopens. Before, one raw draft-14 session asking
// the status of closed tracks pinned every slot for SUBSCRIBER_PIN_MS, renewable, and honest
// subscriptions to closed tracks were refused as not found meanwhile. Over real QUIC.
import assert from "node:assert/strict";
import type { LedgerEntry } from "../../../src/ledger/mod.ts";
import type { TrackPath } from "../../../src/path/mod.ts";
import { LivePublisher, MAX_LIVE_TRACKS } from "../../../src/funnel/live/mod.ts";
import { acceptIetf, ietfCodec as c } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { rawClient } from "../../support/moq.ts";

const entry = (seq: number): LedgerEntry => ({ epoch: 0, seq, wallclock: BigInt(seq + 1) });
const path = (broadcast: string): TrackPath => ({ broadcast: [broadcast], track: "t" });

const request = (requestId: bigint, broadcast: string): Uint8Array =>
  c.encodeSubscribe({
    requestId,
    path: broadcast,
    track: "t",
    priority: 0,
    groupOrder: 0,
    forward: true,
    filter: { kind: "largest-object" },
  }, 14);

/**
 * At bound `max`: 2 x `max` tracks created, the first `max` closed; the status of each closed
 * one asked (as many as there are pin slots), then an honest SUBSCRIBE to another closed track
 * (the reviewer's repro: 4,096 TRACK_STATUS for 8,192 tracks at the default).
 */
async function statusLeavesSubscribeServed(max: number): Promise<void> {
  const publisher = new LivePublisher({
    maxTracks: max,
    lookupTrack: () => Promise.resolve({ newest: entry(0) }),
  });
  const pair = await quicPair("moq-00");
  const moqP = acceptIetf(pair.server, { log: () => {}, serve: publisher.serve });
  try {
    for (let i = 0; i < 2 * max + 1; i++) publisher.committed(path(`c${i}`), [entry(0)]);
    assert.equal(publisher.producer("c0", "t"), undefined, "c0 is closed");
    const raw = await rawClient(pair.client, 14);
    await moqP;
    let id = 0n;
    for (let i = 0; i < max; i++) {
      const answer = await (await raw.request(c.Msg.TrackStatusRequest, request(id, `c${i}`)))();
      assert.equal(answer.type, c.Msg.TrackStatus, `status of c${i}`);
      id += 2n;
    }
    const sub = await (await raw.request(c.Msg.Subscribe, request(id, `c${max}`)))();
    assert.equal(sub.type, c.Msg.SubscribeOk, "the honest SUBSCRIBE was refused");
    assert.equal(publisher.refusedReopens, 0);
  } finally {
    await pair.stop();
    publisher.close();
  }
}

// The bound is lowered to 2 (shipped: MAX_LIVE_TRACKS, 4096) so that two TRACK_STATUS requests
// are enough to fill every pin slot; the twin below runs at the shipped default.
Deno.test("at bound 2, TRACK_STATUS for closed tracks pins none: a SUBSCRIBE to another closed track is served", async () => {
  await statusLeavesSubscribeServed(2);
});

Deno.test("at the shipped default, MAX_LIVE_TRACKS TRACK_STATUS for closed tracks leave a SUBSCRIBE to another closed track served", async () => {
  await statusLeavesSubscribeServed(MAX_LIVE_TRACKS);
});
