// A record's group reset mid-way at the relay while a native QUIC subscriber of the
// flow-controlled track was reading it: Deno's QUIC cannot reset a stream (its abort finishes
// it), so that subscriber read the partial group as a whole one (docs/relay.md, "Deno's QUIC
// cannot reset a stream"), which the docs say "is not sent it again". Counted on the wire: the
// relay must not open a second stream for the same sequence, which a subscriber that does not
// drop duplicate sequences (ours does) would take as a second record.
import assert from "node:assert/strict";
import { LiveFrames, TrackProducer } from "../../../src/moq/mod.ts";
import type { Session } from "../../../src/transport/mod.ts";
import { decodeVarint } from "../../../src/wire/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { next, PATH, publisher, TRACK, WS } from "./_abandoned.ts";

const enc = new TextEncoder();
// Records the sequence of each group stream the relay opens to the session (moq-lite: the
// stream type 0, then the GROUP header's length, subscription id and sequence), from a copy of
// its bytes.
function counting(session: Session, sequences: number[]): Session {
  return new Proxy(session, {
    get(target, prop) {
      if (prop === "acceptUni") {
        return async () => {
          const s = await target.acceptUni();
          if (!s) return s;
          const [mine, peek] = s.readable.tee();
          void headerOf(peek).then((seq) => seq !== undefined && sequences.push(seq));
          return { readable: mine };
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

async function headerOf(readable: ReadableStream<Uint8Array>): Promise<number | undefined> {
  const reader = readable.getReader();
  let buf = new Uint8Array(0);
  try {
    for (;;) {
      let at = 0;
      const fields: number[] = [];
      while (fields.length < 4) {
        const v = decodeVarint(buf, at);
        if (!v) break;
        fields.push(v.value);
        at += v.length;
      }
      if (fields.length === 4) return fields[0] === 0 ? fields[3] : undefined;
      const r = await reader.read();
      if (r.done) return undefined;
      const more = new Uint8Array(buf.length + r.value.length);
      more.set(buf);
      more.set(r.value, buf.length);
      buf = more;
    }
  } catch {
    return undefined;
  } finally {
    reader.cancel().catch(() => {});
  }
}

Deno.test("relay: a native QUIC subscriber reading a record reset mid-way is not sent its sequence twice", async () => {
  using _q = quiet();
  const relay = await startTestRelay({ shippedTimings: true });
  const first = new TrackProducer({ ordered: true, cache: 16 });
  const p1 = await publisher(relay.port, first);
  const sessions = [p1];
  const sequences: number[] = [];
  try {
    p1.announce(PATH);
    const s = await dialOurs(relay.port, { wrap: (t) => counting(t, sequences) }); // native QUIC
    sessions.push(s);
    await seeAnnounced(s, PATH);
    const native = s.subscribe(PATH, TRACK)[Symbol.asyncIterator]();
    const w = await dialOurs(relay.port, WS);
    sessions.push(w);
    await seeAnnounced(w, PATH);
    const partial = w.subscribe(PATH, TRACK, { partial: true })[Symbol.asyncIterator]();
    first.writeGroup(1, enc.encode("r1"));
    assert.equal((await next(native, "group 1")).sequence, 1);
    assert.equal((await next(partial, "group 1 (partial)")).sequence, 1);

    const g2 = new LiveFrames(0n);
    g2.push(enc.encode("r2-part"));
    first.writeGroup(2, g2);
    assert.equal((await next(partial, "group 2 handed over")).sequence, 2);
    p1.close();
    const second = new TrackProducer({ ordered: true, cache: 16 });
    second.writeGroup(1, enc.encode("r1"));
    second.writeGroup(2, [enc.encode("r2-part"), enc.encode("r2-rest")]);
    for (let g = 3; g <= 5; g++) second.writeGroup(g, enc.encode(`r${g}`));
    const p2 = await publisher(relay.port, second);
    sessions.push(p2);
    p2.announce(PATH);
    const got: number[] = [];
    while (!got.includes(5)) got.push((await next(native, "groups 2 to 5")).sequence);
    // Group 2's whole copy, if sent, went before group 5 (sequence order).
    const twos = sequences.filter((s) => s === 2).length;
    assert.equal(twos, 1, `group streams opened, by sequence: ${sequences} (delivered ${got})`);
  } finally {
    for (const s of sessions) s.close();
    await relay.stop();
  }
});
