// Priorities on a congested link: a publisher sends an audio track (50 frames
// of 160 B a second, one per group) and a 2.5 Mbit/s video track (30 frames a
// second, 1 s groups written frame by frame) into a relay, and one subscriber
// session reads both through a link that carries 1.2 Mbit/s from the relay
// (tests/support/udp_proxy.ts with a bottleneck), far below the two together.
// Subscribed with audio above video, nearly every audio frame arrives, soon,
// while video falls behind, newest group first; with the priorities swapped,
// the same link starves audio, so the priority is what made the difference.
// For our subscriber and @moq/net's.
import assert from "node:assert/strict";
import { wallMs } from "../../bench/media/frames.ts";
import {
  type Frames,
  latency,
  net,
  ours,
  overSlowLink,
  type SubscriberKind,
  type TrackPlan,
} from "./_media_link.ts";

const TRACKS: readonly TrackPlan[] = [
  { name: "audio", frame: 160, everyMs: 20, gop: 1 },
  { name: "video", frame: 10_417, everyMs: 1000 / 30, gop: 30 },
];
const SECONDS = 8;
// Frames written in the window may still land this long after it.
const DRAIN_MS = 2000;
// An audio frame later than this is as good as lost to a listener.
const ON_TIME_MS = 1000;

/** What one run measured for a track: frames written in the window, arrivals, latencies. */
interface Measured {
  readonly sent: number;
  readonly got: number;
  /** Arrivals of a group older than one already read from. */
  readonly stale: number;
  readonly onTime: number;
  readonly p50: number;
  readonly p90: number;
  readonly max: number;
}

function measured(frames: Frames, from: number, to: number): Measured {
  const sent = frames.sentIn(from, to);
  const arrivals = frames.of(from, to);
  const onTime = arrivals.filter((a) => a.at - a.sentAt <= ON_TIME_MS).length / Math.max(1, sent);
  return {
    sent,
    got: arrivals.length,
    stale: frames.stale(arrivals),
    onTime,
    ...latency(arrivals),
  };
}

const show = (m: Measured) =>
  `${m.got}/${m.sent} frames (${Math.round(m.onTime * 100)}% within ${ON_TIME_MS} ms, ` +
  `${m.stale} of an older group than one read before), latency p50 ${m.p50} p90 ${m.p90} max ${m.max} ms`;

/** Audio and video at `audio` and `video` priority through the slow link, measured over the window. */
function run(
  kind: SubscriberKind,
  audio: number,
  video: number,
): Promise<{ audio: Measured; video: Measured }> {
  return overSlowLink(TRACKS, kind, { audio, video }, async ({ proxy, frames }) => {
    const from = wallMs();
    const to = from + SECONDS * 1000;
    await new Promise((r) => setTimeout(r, SECONDS * 1000 + DRAIN_MS));
    const result = {
      audio: measured(frames.get("audio")!, from, to),
      video: measured(frames.get("video")!, from, to),
    };
    console.log(
      `audio at ${audio}, video at ${video}: audio ${show(result.audio)}; ` +
        `video ${show(result.video)}; link ${JSON.stringify(proxy.counts.toClient)}`,
    );
    return result;
  });
}

async function audioKeepsFlowing(kind: SubscriberKind): Promise<void> {
  const high = await run(kind, 200, 10);
  const swapped = await run(kind, 10, 200);
  // Audio above video: nearly every frame, on time.
  assert.ok(high.audio.onTime >= 0.9, `audio first: ${show(high.audio)}`);
  // Video gives way: it does not fit the link, and what arrives comes later than audio; but the
  // rest of the link still carries it (a fifth of its frames at least, where about 40% fit), the
  // newest group first: the frames left of a group once the next one began wait behind it.
  assert.ok(high.video.got >= 0.2 * high.video.sent, `video still flows: ${show(high.video)}`);
  assert.ok(high.video.got < 0.75 * high.video.sent, `video: ${show(high.video)}`);
  assert.ok(high.video.p50 > high.audio.p90, "video falls behind audio");
  assert.ok(high.video.stale <= 0.1 * high.video.got, `newest group first: ${show(high.video)}`);
  // The control: on the same link with video first, audio suffers.
  assert.ok(
    swapped.audio.onTime <= high.audio.onTime - 0.5,
    `audio last: ${show(swapped.audio)}; audio first: ${show(high.audio)}`,
  );
}

Deno.test("relay → 1.2 Mbit/s link → our subscriber: audio above video keeps flowing, video yields", () =>
  audioKeepsFlowing(ours));

Deno.test("relay → 1.2 Mbit/s link → @moq/net: audio above video keeps flowing, video yields", () =>
  audioKeepsFlowing(net));
