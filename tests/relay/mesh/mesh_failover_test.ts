// A relay in the middle of the mesh killed with SIGKILL: subscribers on the
// far side keep their subscriptions and miss no funnel record, because an
// alternate route exists and the relays continue the track by sequence.
//
//   funnel -> A <- B <- C -> subscribers (ours and @moq/net)
//             A <- D <- C
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialNet, dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until, within } from "../../support/wait.ts";
import { post } from "../../support/live_funnel.ts";
import {
  funnelThrough,
  keepPosting,
  type MeshRelay,
  routeOf,
  startDiamond,
  stopMesh,
} from "./_mesh.ts";

const dec = new TextDecoder();
const payloadOf = (frame: Uint8Array | undefined) =>
  JSON.parse(dec.decode(frame)).payload as number;

Deno.test("a middle relay killed with SIGKILL: far subscribers keep their subscription and miss no record", async () => {
  using _q = quiet();
  const files = await testCertificateFiles();
  const relays: MeshRelay[] = [];
  let funnel: AsyncDisposable | undefined;
  try {
    const { a, b, d, c } = await startDiamond(files, relays);
    const f = await funnelThrough(a, files);
    funnel = f;
    let n = 0;
    const postNext = async () =>
      assert.equal((await post(f.base, "room/1/chat", String(n++))).status, 201);
    await postNext();
    // Both routes have arrived (one elected, one retained) before the middle one is chosen.
    await until(async () => (await c.metric("routes_retained")) === 1, "c's alternate route");
    const route = await routeOf(c, "/room/1", (r) => r.hops === 2);
    const [middle, other] = route.source === b.address ? [b, d] : [d, b];

    const ours = await dialOurs(c.port);
    await seeAnnounced(ours, "room/1");
    const sub = ours.subscribe("room/1", "chat");
    await sub.ready;
    const net = await dialNet(c.port);
    const netSub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    const it = sub[Symbol.asyncIterator]();

    // Records keep coming, five a second, while the middle relay is killed and replaced.
    const poster = keepPosting(postNext, 200);
    const ourGot: number[] = [];
    const netGot: number[] = [];
    const readOurs = async (until: number) => {
      while (ourGot.at(-1) === undefined || ourGot.at(-1)! < until) {
        const r = await within(it.next(), 15_000, `our record after ${ourGot.at(-1)}`);
        assert.ok(!r.done, "our subscription ended");
        ourGot.push(payloadOf(r.value.frames[0]));
      }
    };
    const readNet = async (until: number) => {
      while (netGot.at(-1) === undefined || netGot.at(-1)! < until) {
        const g = await within(
          netSub.recvGroup(),
          15_000,
          `@moq/net's record after ${netGot.at(-1)}`,
        );
        assert.ok(g, "the @moq/net subscription ended");
        netGot.push(payloadOf((await g.readFrame())?.payload));
      }
    };
    await Promise.all([readOurs(3), readNet(3)]);

    assert.equal(await middle.stop("SIGKILL"), 137);
    // c notices the silent peer after its idle timeout, promotes the other route and continues.
    await routeOf(c, "/room/1", (r) => r.source === other.address);
    assert.equal(await c.metric("route_promotions_total"), 1);
    const afterSwitch = n + 5;
    await Promise.all([readOurs(afterSwitch), readNet(afterSwitch)]);
    await poster.stop();

    for (const [who, got] of [["ours", ourGot], ["@moq/net", netGot]] as const) {
      const from = got[0]!;
      const expected = Array.from({ length: got.at(-1)! - from + 1 }, (_, i) => from + i);
      assert.deepEqual(got, expected, `${who}: every record once, in order, across the failover`);
    }
    assert.equal(await c.metric("subscriber_skips_total"), 0, "nothing was lost at c");
    sub.close();
    netSub.close();
    ours.close();
    net.close();
  } catch (e) {
    for (const r of relays) console.error(`--- ${r.name}\n${r.process.lines.join("\n")}`);
    throw e;
  } finally {
    await funnel?.[Symbol.asyncDispose]();
    await stopMesh(relays, files);
  }
});
