// IETF MoQ Transport over WebTransport in headless Chromium: @moq/net in the page offers only one
// draft's protocol (`moqt-16` or `moqt-20`; draft 14's `moq-00` names no draft over WebTransport,
// so the relay offers it on native QUIC only), and reads a track through the relay from a
// publisher of the same draft in Deno (@moq/net over native QUIC), and from a moq-lite one of ours:
// every group in order, bytes equal.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { TrackProducer } from "../../src/moq/mod.ts";
import { chromiumMissing } from "../support/chromium.ts";
import { dialNetIetf, dialOurs } from "../support/moq.ts";
import { GROUP_END, withMoqNetPage } from "../support/moq_net_page.ts";
import { ignoreWithout } from "../support/requires.ts";

const enc = new TextEncoder();
const GROUPS = 10;

const browserTest = {
  ignore: ignoreWithout("Chromium", chromiumMissing),
  sanitizeOps: false, // playwright's driver keeps internal timers and pipes
  sanitizeResources: false,
};

// In the page: waits for `path` announced, subscribes to `track`, reports each frame.
async function readInPage([path, track]: readonly [string, string]): Promise<string> {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const announced = g.conn.announced(g.Moq.Path.empty());
  for (;;) {
    const e = await announced.next();
    if (!e) throw new Error("the announcements ended");
    if (e.path === path && e.active) break;
  }
  announced.close();
  const sub = g.conn.consume(g.Moq.Path.from(path)).track(track).subscribe({});
  const report = (seq: number, index: number, text: string) =>
    g.sluiceArrived({ seq, index, text, at: 0 });
  void (async () => {
    for (;;) {
      const group = await sub.recvGroup();
      if (!group) return;
      for (let i = 0;; i++) {
        const frame = await group.readFrame();
        if (!frame) {
          report(group.sequence, -1, "");
          break;
        }
        report(group.sequence, i, new TextDecoder().decode(frame.payload));
      }
    }
  })();
  return g.conn.version;
}

const framesOf = (n: number) => [`g${n} a`, `g${n} ${"x".repeat(n * 53)}`];

for (const draft of [16, 20] as const) {
  for (const from of ["ietf", "moq-lite"] as const) {
    Deno.test({
      name: `Chromium (WebTransport, draft ${draft}): @moq/net reads every group in order from ${
        from === "ietf" ? `a draft-${draft}` : "a moq-lite"
      } publisher through the relay`,
      ...browserTest,
      fn: () =>
        withMoqNetPage("WebTransport", async ({ relay, page, arrivals }) => {
          const path = `room/${from}`;
          // Writes one group, returning its sequence.
          let write: (frames: readonly string[]) => number;
          let close: () => void;
          if (from === "ietf") {
            const net = await dialNetIetf(relay.port, draft);
            const broadcast = new Net.Broadcast.Producer();
            const track = broadcast.createTrack("chat");
            net.publish(Net.Path.from(path), broadcast);
            write = (frames) => {
              const g = track.appendGroup();
              for (const f of frames) g.writeString(f);
              g.close();
              return g.sequence;
            };
            close = () => {
              broadcast.close();
              net.close();
            };
          } else {
            const producer = new TrackProducer();
            const pub = await dialOurs(relay.port, { moq: { serve: () => producer } });
            pub.announce(path);
            let seq = 0;
            write = (frames) => {
              producer.writeGroup(++seq, frames.map((f) => enc.encode(f)));
              return seq;
            };
            close = () => pub.close(0, "");
          }
          try {
            const version = await page.evaluate(readInPage, [path, "chat"] as const);
            assert.equal(version, `moq-transport-${draft}`, "the page speaks the draft offered");
            let last = 0;
            await arrivals.warmUp(() => (last = write(["warm"])), "the page");
            const sent: [number, string[]][] = [];
            for (let n = 0; n < GROUPS; n++) {
              const frames = framesOf(n);
              const seq = write(frames);
              sent.push([seq, frames]);
              await arrivals.wait(seq, GROUP_END, `group ${seq} in the page`);
            }
            assert.ok(sent[0]![0] > last);
            for (const [seq, want] of sent) {
              for (const [i, text] of want.entries()) {
                const got = await arrivals.wait(seq, i, `frame ${i} of group ${seq}`);
                assert.equal(got.text, text);
              }
              assert.ok(!arrivals.has(seq, want.length), `group ${seq} has no extra frame`);
            }
          } finally {
            close();
          }
        }, { protocols: [`moqt-${draft}`] }),
    });
  }
}
