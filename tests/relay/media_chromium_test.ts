// moq-dev's own media players through sluice relays, in headless Chromium: <moq-publish>
// (npm @moq/publish) captures Chromium's fake camera and microphone, encodes them with WebCodecs
// (H.264 and Opus) and publishes a hang broadcast to relay A; <moq-watch> (npm @moq/watch) plays
// it in other pages, once through A and once through relay B, which has it from A over the mesh.
// Each player must receive the catalog, decode video frames, receive audio, and play again after
// the relay it watches through is killed and restarted on the same port. The players run over
// WebTransport and over WebSocket; the publisher over WebTransport (see below). The figures
// (frames decoded per second, time to first frame, recovery) are printed.
import assert from "node:assert/strict";
import {
  chromiumMissing,
  FAKE_MEDIA_FLAGS,
  launchChromium,
  serveMediaPage,
  trustKeyFlag,
} from "../support/chromium.ts";
import { testCertificate } from "../support/certs.ts";
import {
  type MediaTarget,
  publishCamera,
  Watcher,
  type WatchStats,
} from "../support/media_page.ts";
import { PAGE_TRANSPORTS } from "../support/moq_net_page.ts";
import { quiet } from "../support/quiet.ts";
import { ignoreWithout } from "../support/requires.ts";
import { meshCertificate, type MeshRelay, startMeshRelay, stopMesh } from "./mesh/_mesh.ts";

const NAME = "media/cam.hang";

/** Playing: the catalog names both codecs, video frames were decoded and audio arrived. */
function playing(s: WatchStats): boolean {
  return s.videoCodec !== undefined && s.audioCodec !== undefined && s.frames > 0 &&
    s.audioBytes > 0;
}

for (const transport of PAGE_TRANSPORTS) {
  Deno.test({
    name:
      `@moq/watch plays @moq/publish's camera through a relay and a two-relay mesh (${transport})`,
    ignore: ignoreWithout("Chromium", chromiumMissing),
    fn: async () => {
      using _q = quiet();
      const cert = await testCertificate();
      const files = await meshCertificate();
      const page$ = await serveMediaPage();
      let a: MeshRelay | undefined;
      let b: MeshRelay | undefined;
      const browser = await launchChromium([await trustKeyFlag(cert.keyPem), ...FAKE_MEDIA_FLAGS]);
      try {
        a = await startMeshRelay("a", files);
        b = await startMeshRelay("b", files, [a]);
        const at = (r: MeshRelay, over = transport): MediaTarget => ({
          url: `https://127.0.0.1:${r.port}/`,
          hash: cert.sha256,
          name: NAME,
          transport: over,
        });
        // @moq/publish 0.2.17 (on @moq/net 0.1) offers WebSocket only bare QMux subprotocols,
        // then older MoQ drafts than sluice speaks: it publishes over WebTransport in both runs.
        const pubLog: string[] = [];
        await publishCamera(browser.context, page$.origin, at(a, "WebTransport"), pubLog);
        const direct = await Watcher.open(browser.context, page$.origin, at(a));
        const mesh = await Watcher.open(browser.context, page$.origin, at(b));
        for (const [what, w] of [["relay A", direct], ["mesh A→B", mesh]] as const) {
          const first = await w.until((s) => s.frames > 0, `${what}: a decoded frame`);
          await w.until(playing, `${what}: catalog, video and audio`);
          const fps = await w.frameRate(5_000);
          const s = await w.stats();
          console.log(
            `${transport}, ${what}: first frame ${first - w.startedAt} ms after the player ` +
              `started, ${fps.toFixed(1)} frames decoded/s, catalog ${s.videoCodec} + ` +
              `${s.audioCodec}, ${s.audioBytes} audio bytes`,
          );
          assert.ok(w.log.some((l) => l.includes(`connected via ${transport}`)), w.log.join("\n"));
          assert.ok(fps > 1, `${what}: ${fps} frames/s`);
        }
        assert.ok(pubLog.some((l) => l.includes("connected via WebTransport")), pubLog.join("\n"));

        // Relay B killed and started again in place: the mesh player plays again.
        const bPort = b.port;
        await b.stop("SIGKILL");
        const killedB = Date.now();
        const framesAtKill = (await mesh.stats()).frames;
        b = await startMeshRelay("b", files, [a], {}, bPort);
        const backB = await mesh.until((s) => s.frames > framesAtKill + 10, "mesh: frames again");
        console.log(
          `${transport}, relay B restarted: frames again ${backB - killedB} ms after the kill`,
        );

        // Relay A (the publisher's and the direct player's) killed and started again.
        const aPort = a.port;
        await a.stop("SIGKILL");
        const killedA = Date.now();
        const directAtKill = (await direct.stats()).frames;
        const meshAtKill = (await mesh.stats()).frames;
        a = await startMeshRelay("a", files, [], {}, aPort);
        const backA = await direct.until(
          (s) => s.frames > directAtKill + 10,
          "direct: frames again",
        );
        const backMesh = await mesh.until((s) => s.frames > meshAtKill + 10, "mesh: frames again");
        console.log(
          `${transport}, relay A restarted (publisher and player reconnect): frames again ` +
            `${backA - killedA} ms after the kill through A, ${backMesh - killedA} ms through B`,
        );
      } finally {
        await browser.close();
        await stopMesh([a, b], files);
        await page$.stop();
      }
    },
  });
}
