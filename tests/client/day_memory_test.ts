// A feed left open for a simulated day (an injected clock moved a second
// at a time) holds steady memory: the keeper sleeps until something
// happens instead of racing a pending promise every second (which kept
// about 330 bytes a round, 28 MB a day). The session speaks moq-lite-04,
// which has no liveness probe, so the day needs no network round trips;
// bench/client_memory.ts measures the same with lite-05 and its probes.
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { type Dialer, openFeed, post, SessionPool } from "../../src/client/mod.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { quiet } from "../support/quiet.ts";
import { Reader } from "./_feed.ts";
import { clockAtNow, untilOnClock } from "./_clock.ts";
import { startServers } from "./_servers.ts";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

function heapAfterGc(): number {
  gc();
  gc();
  return Deno.memoryUsage().heapUsed;
}

const immediate = () => new Promise<void>((r) => setImmediate(r));

Deno.test("a feed open for a simulated day holds steady memory", async () => {
  using _q = quiet();
  await using s = await startServers();
  const track = s.track("day");
  await post(track, { n: 0 });
  const cert = await testCertificate();
  const dial: Dialer = (url) =>
    connectQuicSession(url, {
      alpn: ["moq-lite-04"],
      serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
    });
  const clock = clockAtNow();
  const reader = new Reader(
    openFeed({
      track,
      moq: s.moqt,
      from: "start",
      dial,
      timers: clock,
      now: clock.now,
      sessions: new SessionPool(),
    }),
  );
  try {
    await untilOnClock(
      clock,
      () => reader.records.length >= 1 && reader.feed.state === "live",
      "live",
    );
    const hour = async () => {
      for (let i = 0; i < 3600; i++) {
        clock.advance(1000);
        await immediate();
      }
    };
    await hour();
    const first = heapAfterGc();
    for (let h = 1; h < 24; h++) await hour();
    const last = heapAfterGc();
    const grown = last - first;
    console.log(`heap after hour 1: ${first} B, after hour 24: ${last} B (${grown} B grown)`);
    assert.ok(grown < 1_000_000, `grew ${grown} bytes in 23 simulated hours`);
    assert.equal(reader.feed.state, "live");
    assert.ok(clock.pending.length <= 4, `timers pending: ${clock.pending.length}`);
    // Still delivering after the day.
    await post(track, { n: 1 });
    await reader.count(2);
  } finally {
    await reader.close();
  }
});
