// A group its publisher abandoned part-way (a reset stream) is not a group the relay holds.
// Its ring keeps the partial group so that the reset reaches the subscribers already reading
// it; but a FETCH of it goes upstream, where the publisher answers from its history (a
// funnel's ledger has every record whole), and the relay repairs it, so subscribers of
// whole groups get it whole. Before, the relay answered such a FETCH from its ring with the
// partial group, reset again, and counted the group as delivered: an acknowledged record
// reached no subscriber.
//
// Deno's QUIC cannot reset a stream (its abort finishes it), so the publisher and the
// subscribers that read group streams dial over WebSocket, where QMux carries RESET_STREAM: a
// native QUIC subscriber reading the group when it was abandoned reads it as a group that
// ended early (docs/relay.md, "Cut-through"). The FETCH is made over native QUIC.
import assert from "node:assert/strict";
import {
  LiveFrames,
  type MoqSession,
  type ReceivedGroup,
  TrackProducer,
} from "../../../src/moq/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { within } from "../../support/wait.ts";
import { startTestRelay } from "../../support/test_relay.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const PATH = "live/records";
const TRACK = "records";

const text = (frames: readonly Uint8Array[]) => frames.map((f) => dec.decode(f));

Deno.test("relay: a group its publisher abandoned part-way is fetched upstream and repaired whole", async () => {
  using _q = quiet();
  // The relay's shipped timings: the promise under test is made at defaults.
  const relay = await startTestRelay({ shippedTimings: true });
  // The publisher's history: every group whole, as a funnel's ledger holds its records.
  const history = new Map<number, Uint8Array[]>();
  const producer = new TrackProducer({
    ordered: true, // a funnel's records: every group is wanted (media abandons groups on purpose)
    cache: 8,
    fetchMissing: (sequence) => {
      const frames = history.get(sequence);
      return Promise.resolve(frames && { frames, timestamp: 0n });
    },
  });
  const sessions: MoqSession[] = [];
  try {
    const pub = await dialOurs(relay.port, {
      webSocket: ["qmux-02"],
      moq: { serve: (r) => (r.path === PATH && r.track === TRACK ? producer : "not_found") },
    });
    sessions.push(pub);
    pub.announce(PATH);
    const dial = async (webSocket?: boolean): Promise<MoqSession> => {
      const s = await dialOurs(relay.port, webSocket ? { webSocket: ["qmux-02"] } : {});
      sessions.push(s);
      await seeAnnounced(s, PATH);
      return s;
    };
    // A subscriber of whole groups, and one that takes groups from their first frame, to see
    // the relay pass the reset on.
    const whole = (await dial(true)).subscribe(PATH, TRACK)[Symbol.asyncIterator]();
    const partial = (await dial(true)).subscribe(PATH, TRACK, { partial: true })[
      Symbol.asyncIterator
    ]();
    const write = (sequence: number, frames: Uint8Array[]) => {
      history.set(sequence, frames);
      producer.writeGroup(sequence, frames);
    };
    write(1, [enc.encode("warm")]);
    assert.equal((await next(whole)).sequence, 1);
    assert.equal((await next(partial)).sequence, 1);

    // Group 2 starts, its first frame reaches the relay, and its stream is abandoned.
    const live = new LiveFrames(0n);
    live.push(enc.encode("f1"));
    history.set(2, [enc.encode("f1"), enc.encode("f2")]);
    producer.writeGroup(2, live);
    const cut = await next(partial);
    assert.equal(cut.sequence, 2);
    live.reset();
    while (cut.live!.state === "open") await cut.live!.changed();
    assert.equal(cut.live!.state, "reset");
    write(3, [enc.encode("after")]);

    // The subscriber of whole groups gets group 2 whole (late, by repair) and group 3.
    const got = new Map<number, string[]>();
    await within(
      (async () => {
        while (!got.has(2) || !got.has(3)) {
          const g = await next(whole);
          got.set(g.sequence, text(g.frames));
        }
      })(),
      30_000,
      "groups 2 and 3 at the subscriber of whole groups",
    );
    assert.deepEqual(got.get(2), ["f1", "f2"]);
    assert.deepEqual(got.get(3), ["after"]);

    // A FETCH of group 2 at the relay, over native QUIC, is answered whole.
    const fetched: ReceivedGroup = await within(
      (await dial()).fetch(PATH, TRACK, 2),
      30_000,
      "the FETCH of group 2",
    );
    assert.deepEqual(text(fetched.frames), ["f1", "f2"]);
  } finally {
    for (const s of sessions) s.close();
    await relay.stop();
  }
});

async function next(it: AsyncIterator<ReceivedGroup>): Promise<ReceivedGroup> {
  const r = await it.next();
  assert.ok(!r.done, "the subscription ended");
  return r.value;
}
