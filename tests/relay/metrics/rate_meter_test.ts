import assert from "node:assert/strict";
import { RateMeter } from "../../../src/relay/metrics/rate_meter.ts";

Deno.test("route bitrate is the byte rate over the last five seconds", () => {
  let t = 10_000;
  const m = new RateMeter(() => t, 5);
  assert.equal(m.bitsPerSecond(), 0);
  for (let i = 0; i < 5; i++) {
    m.add(1000); // 1000 B in each of the seconds 10..14
    if (i < 4) t += 1000;
  }
  t += 999;
  assert.equal(m.bitsPerSecond(), 8000);
  t += 2000; // in second 16 the window is 12..16: three seconds of traffic
  assert.equal(m.bitsPerSecond(), 4800);
  t += 60_000;
  assert.equal(m.bitsPerSecond(), 0);
});
