// @moq/net in headless Chromium and a Deno peer of ours exchange multi-frame groups through the
// relay, over Chromium's WebTransport (the certificate pinned by hash) and over WebSocket (QMux,
// WebTransport removed from the page), in both directions. Every frame reaches its reader while
// the publisher has not written the next one: the next is written only once the reader reported
// this one, so a relay that held a group's frames back until its end would time the test out.
// The relay's sluice_relay_sessions_total{transport} shows the page's session used the transport
// named (../support/moq_net_page.ts, which also says why Chromium's WebTransport needs the
// certificate's hash and 127.0.0.1). Per-frame latency, publish to read across the two processes'
// wall clocks, is printed (p50 and max), not asserted beyond a sanity bound.
import assert from "node:assert/strict";
import { LiveFrames, type Subscription, TrackProducer } from "../../src/moq/mod.ts";
import { chromiumMissing } from "../support/chromium.ts";
import { dialOurs, seeAnnounced } from "../support/moq.ts";
import {
  type Arrival,
  Arrivals,
  GROUP_END,
  PAGE_TRANSPORTS,
  printLatency,
  wallClockMs,
  withMoqNetPage,
} from "../support/moq_net_page.ts";
import { ignoreWithout } from "../support/requires.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const PATH = "live/cam";
const TRACK = "video";
const GROUPS = 3;
const FRAMES = 5;

const browserTest = {
  ignore: ignoreWithout("Chromium", chromiumMissing),
  sanitizeOps: false, // playwright's driver keeps internal timers and pipes
  sanitizeResources: false,
};

// A frame's payload: its index in the group and its publisher's wall-clock write time.
function stamp(index: number, at: number): string {
  return `${index}@${at}`;
}

// Publish-to-read time of a frame whose payload is a stamp; a wrong clock would show here.
function latency(a: Arrival): number {
  const ms = a.at - Number(a.text.split("@")[1]);
  assert.ok(ms > -50 && ms < 20_000, `frame latency ${ms} ms is not plausible`);
  return ms;
}

// In the page: once the broadcast is announced, subscribes with @moq/net and reports each frame
// as it reads it, then each group's end (a subscription's groups are read side by side).
async function readInPage([path, track]: readonly [string, string]): Promise<void> {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const announced = g.conn.announced(g.Moq.Path.empty());
  for (;;) {
    const e = await announced.next();
    if (!e) throw new Error("the announcements ended");
    if (e.path === path && e.active) break;
  }
  announced.close();
  const sub = g.conn.consume(g.Moq.Path.from(path)).track(track).subscribe({ priority: 0 });
  const report = (seq: number, index: number, text: string) =>
    g.sluiceArrived({ seq, index, text, at: performance.timeOrigin + performance.now() });
  void (async () => {
    for (;;) {
      const group = await sub.recvGroup();
      if (!group) return;
      void (async () => {
        for (let i = 0;; i++) {
          const frame = await group.readFrame();
          if (!frame) return report(group.sequence, -1, "");
          report(group.sequence, i, new TextDecoder().decode(frame.payload));
        }
      })();
    }
  })();
}

// In Deno: reports each frame of our partial subscription as it arrives, then each group's end;
// ends when the session closes.
async function readInDeno(sub: Subscription, arrivals: Arrivals): Promise<void> {
  for await (const group of sub) {
    void (async () => {
      for (let i = 0;;) {
        for (; i < group.frames.length; i++) {
          arrivals.add({
            seq: group.sequence,
            index: i,
            text: dec.decode(group.frames[i]),
            at: wallClockMs(),
          });
        }
        if (group.live?.state !== "open") {
          return arrivals.add({
            seq: group.sequence,
            index: GROUP_END,
            text: "",
            at: wallClockMs(),
          });
        }
        await group.live.changed();
      }
    })();
  }
}

for (const transport of PAGE_TRANSPORTS) {
  Deno.test({
    name:
      `Chromium (${transport}): @moq/net reads each frame of a group before our publisher writes the next`,
    ...browserTest,
    fn: () =>
      withMoqNetPage(transport, async ({ relay, page, arrivals }) => {
        const producer = new TrackProducer();
        const pub = await dialOurs(relay.port, { moq: { serve: () => producer } });
        try {
          pub.announce(PATH);
          await page.evaluate(readInPage, [PATH, TRACK] as const);
          // The subscription starts at the latest group: write until the page has one.
          let seq = 0;
          await arrivals.warmUp(() => producer.writeGroup(++seq, enc.encode("warm")), "the page");
          const ms: number[] = [];
          for (let n = 0; n < GROUPS; n++) {
            const group = new LiveFrames(0n);
            seq++;
            for (let i = 0; i < FRAMES; i++) {
              group.push(enc.encode(stamp(i, wallClockMs())));
              if (i === 0) producer.writeGroup(seq, group);
              const got = await arrivals.wait(seq, i, `frame ${i} of group ${seq} in the page`);
              assert.equal(got.text, dec.decode(group.frames[i]));
              ms.push(latency(got));
            }
            assert.ok(
              !arrivals.has(seq, GROUP_END),
              "the group is open until the publisher ends it",
            );
            group.finish();
            await arrivals.wait(seq, GROUP_END, `the end of group ${seq} in the page`);
          }
          printLatency(`Deno → relay → Chromium (${transport})`, ms);
        } finally {
          pub.close();
        }
      }),
  });

  Deno.test({
    name:
      `Chromium (${transport}): @moq/net publishes groups frame by frame; our subscriber reads each before the page writes the next`,
    ...browserTest,
    fn: () =>
      withMoqNetPage(transport, async ({ relay, page }) => {
        await page.evaluate(([path, track]) => {
          // deno-lint-ignore no-explicit-any
          const g = globalThis as any;
          const broadcast = new g.Moq.Broadcast.Producer();
          const t = broadcast.createTrack(track);
          g.conn.publish(g.Moq.Path.from(path), broadcast);
          g.open = () => (g.group = t.appendGroup()).sequence;
          g.write = (i: number) => {
            const text = `${i}@${performance.timeOrigin + performance.now()}`;
            g.group.writeString(text);
            return text;
          };
        }, [PATH, TRACK] as const);
        const sub$ = await dialOurs(relay.port);
        try {
          await seeAnnounced(sub$, PATH);
          const arrivals = new Arrivals();
          readInDeno(sub$.subscribe(PATH, TRACK, { partial: true }), arrivals).catch(() => {});
          // deno-lint-ignore no-explicit-any
          type G = any;
          const open = () => page.evaluate(() => (globalThis as G).open() as number);
          const write = (i: number) =>
            page.evaluate((i) => (globalThis as G).write(i) as string, i);
          const end = () => page.evaluate(() => (globalThis as G).group.close());
          await arrivals.warmUp(async () => {
            await open();
            await write(0);
            await end();
          }, "our subscriber");
          const ms: number[] = [];
          for (let n = 0; n < GROUPS; n++) {
            const seq = await open();
            for (let i = 0; i < FRAMES; i++) {
              const text = await write(i);
              const got = await arrivals.wait(seq, i, `frame ${i} of the page's group ${seq}`);
              assert.equal(got.text, text);
              ms.push(latency(got));
            }
            assert.ok(!arrivals.has(seq, GROUP_END), "the group is open until the page ends it");
            await end();
            await arrivals.wait(seq, GROUP_END, `the end of the page's group ${seq}`);
          }
          printLatency(`Chromium (${transport}) → relay → Deno`, ms);
        } finally {
          sub$.close();
        }
      }),
  });
}
