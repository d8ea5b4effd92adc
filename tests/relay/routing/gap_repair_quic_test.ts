// Gap repair across the wire: a relay at shipped timings repairs a gap longer than one repair
// window by FETCHes forwarded over QUIC to the publisher, none of it given up; and a group a
// subscriber went on without, arriving late among more groups than the ring holds, still
// reaches it.
import assert from "node:assert/strict";
import { TrackProducer } from "../../../src/moq/mod.ts";
import { sleep } from "../../../src/timers/mod.ts";
import { families, sampleValue } from "../../support/prometheus.ts";
import { dialOurs, seeAnnounced, stallable } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until } from "../../support/wait.ts";
import { startTestRelay } from "../../support/test_relay.ts";

const enc = new TextEncoder();
const GAP = 1999;

Deno.test("a relay repairs a gap of 1999 groups through the publisher, every group fetched", async () => {
  using _q = quiet();
  const t = await startTestRelay({ shippedTimings: true });
  // The publisher's ledger: every group; its ring and its live stream skip 1..1999.
  const ledger = new Map<number, Uint8Array>();
  for (let s = 0; s <= GAP + 1; s++) ledger.set(s, enc.encode(`record ${s}`));
  const producer = new TrackProducer({
    fetchMissing: (sequence) => {
      const frame = ledger.get(sequence);
      return Promise.resolve(frame && { frames: [frame], timestamp: 0 });
    },
  });
  const pub = await dialOurs(t.port, {
    moq: { serve: (r) => (r.path === "gap/1" && r.track === "t" ? producer : "not_found") },
  });
  pub.announce("gap/1");
  const sub = await dialOurs(t.port, { alpn: "moq-lite-05" });
  try {
    await seeAnnounced(sub, "gap/1");
    const track = sub.subscribe("gap/1", "t");
    await track.ready;
    const groups = track[Symbol.asyncIterator]();
    producer.writeGroup(0, ledger.get(0)!);
    assert.equal((await groups.next()).value?.sequence, 0);
    producer.writeGroup(GAP + 1, ledger.get(GAP + 1)!);
    // Keep reading, as a subscriber does.
    void (async () => {
      while (!(await groups.next()).done);
    })().catch(() => {});
    const repairs = async (): Promise<number | undefined> =>
      sampleValue(
        families(await (await t.get("/metrics")).text()),
        "sluice_relay_group_repairs_total",
      );
    const lost = (): string[] => t.logs.filter((l) => l.includes("lost"));
    let repaired: number | undefined;
    await until(async () => {
      repaired = await repairs();
      return repaired === GAP || lost().length > 0;
    }, "the gap to be repaired or given up");
    assert.deepEqual(lost(), [], "nothing given up");
    assert.equal(repaired, GAP);
  } finally {
    sub.close();
    pub.close();
    await t.stop();
  }
});

Deno.test("a publisher jumping its sequence by 2^50 costs the relay one counted hole and FETCHes near the top only", async () => {
  using _q = quiet();
  const t = await startTestRelay({ shippedTimings: true });
  const top = 2 ** 50;
  const asked: number[] = [];
  // A publisher that finds nothing it is asked for.
  const producer = new TrackProducer({
    fetchMissing: (sequence) => {
      asked.push(sequence);
      return Promise.resolve(undefined);
    },
  });
  const pub = await dialOurs(t.port, {
    moq: { serve: (r) => (r.path === "jump/1" && r.track === "t" ? producer : "not_found") },
  });
  pub.announce("jump/1");
  const sub = await dialOurs(t.port, { alpn: "moq-lite-05" });
  try {
    await seeAnnounced(sub, "jump/1");
    const track = sub.subscribe("jump/1", "t");
    await track.ready;
    const groups = track[Symbol.asyncIterator]();
    producer.writeGroup(0, enc.encode("first"));
    assert.equal((await groups.next()).value?.sequence, 0);
    producer.writeGroup(top, enc.encode("jump"));
    assert.equal((await groups.next()).value?.sequence, top, "the jump is served");
    producer.writeGroup(top + 1, enc.encode("after"));
    assert.equal((await groups.next()).value?.sequence, top + 1, "and what follows it");
    const floor = top - 4095;
    await until(
      () => t.logs.some((l) => l.includes(`${floor - 1} group(s) in 1..${floor - 1} lost`)),
      "the part of the jump the ring cannot take to be given up",
    );
    await until(() => asked.length > 0, "the repair's first FETCH");
    assert.deepEqual(asked, [floor], "the lowest group the ring can take, asked for first");
    const skips = sampleValue(
      families(await (await t.get("/metrics")).text()),
      "sluice_relay_subscriber_skips_total",
    );
    assert.equal(skips, 1, `one hole, counted once: ${t.logs.join("\n")}`);
  } finally {
    sub.close();
    pub.close();
    await t.stop();
  }
});

Deno.test("a group a relay subscriber went on without, arriving late among more groups than the ring holds, still reaches it", async () => {
  using _q = quiet();
  // Shipped timings and ring (8 groups), as the relay of two funnels on one ledger runs.
  const t = await startTestRelay({ shippedTimings: true });
  // The publisher's ledger, as a funnel reads it: group 2 is not there yet (another funnel
  // commits it late), every other group written is.
  const ledger = new Map<number, Uint8Array>();
  const producer = new TrackProducer({
    ordered: true, // a funnel's records: the relay flow controls them
    fetchMissing: (sequence) => {
      const frame = ledger.get(sequence);
      return Promise.resolve(frame && { frames: [frame], timestamp: 0 });
    },
  });
  const write = (seq: number) => {
    ledger.set(seq, enc.encode(`record ${seq}`));
    producer.writeGroup(seq, ledger.get(seq)!);
  };
  const pub = await dialOurs(t.port, {
    moq: { serve: (r) => (r.path === "late/1" && r.track === "t" ? producer : "not_found") },
  });
  pub.announce("late/1");
  let gate!: ReturnType<typeof stallable>;
  // Few concurrent uni streams: while it does not accept them, the relay's sends to it wait.
  const sub = await dialOurs(t.port, { maxUni: 2, wrap: (s) => (gate = stallable(s)).session });
  try {
    await seeAnnounced(sub, "late/1");
    const track = sub.subscribe("late/1", "t");
    await track.ready;
    const groups = track[Symbol.asyncIterator]();
    const got = new Set<number>();
    write(1);
    assert.equal((await groups.next()).value?.sequence, 1);
    write(3);
    assert.equal(
      (await groups.next()).value?.sequence,
      3,
      "2 is passed: not there where missing groups are read",
    );
    got.add(1).add(3);
    gate.hold();
    // Fill the sends to the stalled subscriber (one by one: the publisher's own session is
    // not flow controlled, and would skip a burst past its queue bound).
    for (let s = 4; s <= 24; s++) {
      write(s);
      await sleep(10);
    }
    await sleep(300);
    // The other funnel's commit of 2 is learned: it comes late, then more than the ring holds.
    ledger.set(2, enc.encode("record 2"));
    producer.writeGroup(2, ledger.get(2)!);
    await sleep(300);
    for (let s = 25; s <= 44; s++) {
      write(s);
      await sleep(10);
    }
    await sleep(300);
    gate.release();
    const deadline = Date.now() + 10_000;
    while (got.size < 44 && Date.now() < deadline) {
      const next = await Promise.race([groups.next(), sleep(deadline - Date.now())]);
      if (!next || next.done) break;
      got.add(next.value.sequence);
    }
    const missing = Array.from({ length: 44 }, (_, i) => i + 1).filter((s) => !got.has(s));
    assert.deepEqual(missing, [], "every group reached the subscriber");
  } finally {
    sub.close();
    pub.close();
    await t.stop();
  }
});
