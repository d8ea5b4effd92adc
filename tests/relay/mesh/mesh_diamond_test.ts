// The promise "an acknowledged record reaches every subscriber" across relay
// failures, at shipped defaults (GROUP_CACHE_SIZE 8, no tuning): a diamond
// mesh, records posted at 20/s, and the middle relay on the subscriber's
// route killed with SIGKILL twice (the second time after the first one came
// back, so the route moves there and back).
//
//   funnel -> A <- B <- C -> @moq/net subscriber
//             A <- D <- C
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialNet } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until, within } from "../../support/wait.ts";
import { post } from "../../support/live_funnel.ts";
import {
  funnelThrough,
  keepPosting,
  type MeshRelay,
  routeOf,
  startDiamond,
  startMeshRelay,
  stopMesh,
} from "./_mesh.ts";

const dec = new TextDecoder();
const payloadOf = (frame: Uint8Array | undefined) =>
  JSON.parse(dec.decode(frame)).payload as number;

/** Records posted every 50 ms (20/s), as the failing report posted them. */
const POST_EVERY_MS = 50;

Deno.test("diamond mesh at defaults, the middle relay SIGKILLed twice: every acknowledged record reaches the subscriber", async () => {
  using _q = quiet();
  const files = await testCertificateFiles();
  const relays: MeshRelay[] = [];
  let funnel: AsyncDisposable | undefined;
  let measuring = true; // silences count while records are being posted
  let poster: { stop(): Promise<void> } | undefined;
  try {
    const diamond = await startDiamond(files, relays);
    const { a, c } = diamond;
    let { b, d } = diamond;
    const f = await funnelThrough(a, files);
    funnel = f;
    const acknowledged: number[] = [];
    let n = 0;
    const postNext = async () => {
      const payload = n++;
      const r = await post(f.base, "room/1/chat", String(payload));
      if (r.status === 201) acknowledged.push(payload);
    };
    await postNext();
    await until(async () => (await c.metric("routes_retained")) === 1, "c's alternate route");

    const net = await dialNet(c.port);
    const sub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    const got = new Set<number>();
    let lastAt = Date.now();
    let longestSilence = 0;
    const reading = (async () => {
      for (;;) {
        const g = await sub.recvGroup();
        if (!g) return;
        const payload = payloadOf((await g.readFrame())?.payload);
        const now = Date.now();
        if (measuring) longestSilence = Math.max(longestSilence, now - lastAt);
        lastAt = now;
        got.add(payload);
      }
    })();
    poster = keepPosting(postNext, POST_EVERY_MS);
    await until(() => got.size >= 5, "the first records at the subscriber");
    const first = Math.min(...got);
    lastAt = Date.now();

    for (const round of [1, 2]) {
      const route = await routeOf(c, "/room/1", (r) => r.hops === 2);
      const middle = route.source === b.address ? b : d;
      const other = middle === b ? d : b;
      const before = got.size;
      assert.equal(await middle.stop("SIGKILL"), 137, `round ${round}: SIGKILL`);
      await routeOf(c, "/room/1", (r) => r.source === other.address);
      await until(() => got.size >= before + 40, `round ${round}: records after the failover`);
      // The killed relay comes back on its port; c redials it and holds it as the alternate.
      const back = await startMeshRelay(middle.name, files, [a], {}, middle.port);
      relays[relays.indexOf(middle)] = back;
      if (middle === b) b = back;
      else d = back;
      await until(async () => (await c.metric("routes_retained")) === 1, "c's alternate again");
    }
    measuring = false;
    await poster.stop();
    const wanted = acknowledged.filter((p) => p >= first);
    const missing = () => wanted.filter((p) => !got.has(p));
    await until(() => missing().length === 0, "every acknowledged record").catch(() => {});
    console.log(
      `diamond: ${n} posted, ${acknowledged.length} acknowledged, ${wanted.length} expected ` +
        `from ${first}, ${wanted.length - missing().length} delivered, longest silence ` +
        `${longestSilence} ms, ${await c.metric("group_repairs_total")} repaired at c`,
    );
    assert.deepEqual(missing(), [], "acknowledged records that never reached the subscriber");
    assert.equal(await c.metric("subscriber_skips_total"), 0, "c skipped nothing");
    sub.close();
    net.close();
    await within(reading, 5000, "the reader to end");
  } catch (e) {
    for (const r of relays) console.error(`--- ${r.name}\n${r.process.lines.join("\n")}`);
    throw e;
  } finally {
    await poster?.stop();
    await funnel?.[Symbol.asyncDispose]();
    await stopMesh(relays, files);
  }
});
