// A new subscription is answered while video fills the link: the relay's
// control streams (subscription answers, announcements, TRACK_INFO) go before
// every group, whatever its priority. Through a 1.2 Mbit/s link carrying a
// 2.5 Mbit/s video track at priority 200, a subscriber asks for an audio track:
// it is answered and its first frame arrives while video keeps queuing. When
// the answer was sent at order 0, below every group, it waited behind the video.
import assert from "node:assert/strict";
import type { MoqSession } from "../../../src/moq/mod.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { sleep } from "../../../src/timers/mod.ts";
import { type MediaSubscriber, overSlowLink, PATH, type TrackPlan } from "../_media_link.ts";

const TRACKS: readonly TrackPlan[] = [
  // 2.5 Mbit/s in 2 s groups, written frame by frame.
  { name: "video", frame: 10_417, everyMs: 33, gop: 60 },
  // 64 kbit/s, one frame a group.
  { name: "audio", frame: 160, everyMs: 20, gop: 1 },
];
// How long video fills the link (and the relay's send buffers) before audio is asked for.
const CONGESTED_MS = 3000;
// Much longer than an answer takes on this link (tens of ms); short beside the test.
const ANSWER_WITHIN_MS = 5000;

Deno.test("relay → 1.2 Mbit/s link full of video → our subscriber: a new subscription is answered and its first frame arrives", async () => {
  let session: MoqSession | undefined;
  // Our subscriber on video only; the test subscribes to audio later on the same session.
  const videoOnly = async (
    port: number,
    priorities: Readonly<Record<string, number>>,
    onFrame: (track: string, frame: Uint8Array) => void,
  ): Promise<MediaSubscriber> => {
    const moq = await dialOurs(port);
    session = moq;
    await seeAnnounced(moq, PATH);
    const sub = moq.subscribe(PATH, "video", { priority: priorities.video!, partial: true });
    void (async () => {
      try {
        for await (const g of sub) {
          void (async () => {
            let read = 0;
            for (;;) {
              while (read < g.frames.length) onFrame("video", g.frames[read++]!);
              if (g.live?.state !== "open") return;
              await g.live.changed();
            }
          })();
        }
      } catch {
        // The session closed at the end of the test.
      }
    })();
    return { update: () => Promise.resolve(), close: () => moq.close(0, "done") };
  };
  await overSlowLink(TRACKS, videoOnly, { video: 200 }, async ({ frames, proxy }) => {
    await sleep(CONGESTED_MS);
    const asked = performance.now();
    const audio = session!.subscribe(PATH, "audio", { priority: 255 });
    const answered = await Promise.race([
      audio.ready.then(() => performance.now() - asked),
      sleep(ANSWER_WITHIN_MS).then(() => undefined),
    ]);
    const it = audio[Symbol.asyncIterator]();
    const first = answered === undefined ? undefined : await Promise.race([
      it.next().then(() => performance.now() - asked),
      sleep(ANSWER_WITHIN_MS).then(() => undefined),
    ]);
    const video = frames.get("video")!;
    console.log(
      `audio subscription answered after ${
        answered?.toFixed(0) ?? "(none)"
      } ms, first frame after ` +
        `${first?.toFixed(0) ?? "(none)"} ms; video frames read ${video.arrivals.length} of ` +
        `${video.sent.length}; link ${JSON.stringify(proxy.counts.toClient)}`,
    );
    audio.close();
    assert.ok(answered !== undefined, `no answer within ${ANSWER_WITHIN_MS} ms`);
    assert.ok(first !== undefined, `no audio frame within ${ANSWER_WITHIN_MS} ms of the answer`);
    assert.ok(video.arrivals.length < video.sent.length, "the link was full of video");
  }, ["video"]);
});
