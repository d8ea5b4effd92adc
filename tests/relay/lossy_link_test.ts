// The relay on lossy, slow, reordering links (a userspace UDP proxy: 5% of
// datagrams dropped and 50 ms delay each way, a few held back so later ones
// overtake): every group a publisher sends reaches every subscriber exactly
// once, whether the loss is between publisher and relay or relay and
// subscriber, for our subscribers and @moq/net's.
import * as Net from "@moq/net";
import { TrackProducer } from "../../src/moq/mod.ts";
import { assertExactlyOnce, report, subscriberPair } from "../support/delivery.ts";
import { type LinkShape, startUdpProxy } from "../support/udp_proxy.ts";
import { dialNet, dialOurs } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { startTestRelay, type TestRelay } from "../support/test_relay.ts";

const GROUPS = 300;
const LOSSY: LinkShape = { loss: 0.05, delayMs: 50, jitterMs: 5, reorder: 0.02 };
const pace = () => new Promise((r) => setTimeout(r, 2));

async function withRelay(run: (relay: TestRelay) => Promise<void>): Promise<void> {
  using _q = quiet();
  const relay = await startTestRelay();
  try {
    await run(relay);
  } finally {
    await relay.stop();
  }
}

Deno.test("@moq/net publisher → lossy link → relay: every group reaches every subscriber once", () =>
  withRelay(async (relay) => {
    const proxy = startUdpProxy({
      targetPort: relay.port,
      toTarget: LOSSY,
      toClient: LOSSY,
      seed: 11,
    });
    const publisher = await dialNet(proxy.port);
    const broadcast = new Net.Broadcast.Producer();
    const track = broadcast.createTrack("chat");
    publisher.publish(Net.Path.from("room/1"), broadcast);
    const sent = new Set<number>();
    let sending = true;
    const subs = await subscriberPair(relay.port, () => sending ? undefined : sent);
    // The relay subscribes upstream when the first subscriber arrives: wait for a first group.
    const warm = track.appendGroup();
    warm.writeString(`g${warm.sequence}`);
    warm.close();
    await subs.warm(warm.sequence);
    const deadline = AbortSignal.timeout(30_000);
    const readers = subs.start(deadline);
    for (let i = 0; i < GROUPS; i++) {
      const g = track.appendGroup();
      g.writeString(`g${g.sequence}`);
      g.close();
      sent.add(g.sequence);
      await pace();
    }
    sending = false;
    await Promise.all(readers.map((r) => r.done));
    const tallies = readers.map((r) => r.tally);
    report("publisher link lossy", GROUPS, tallies, proxy);
    assertExactlyOnce(tallies, sent, (s) => `g${s}`);
    subs.close();
    publisher.close();
    await proxy.close();
  }));

Deno.test("relay → lossy link → subscribers: every group reaches every subscriber once", () =>
  withRelay(async (relay) => {
    const producer = new TrackProducer({ cache: 64 });
    const publisher = await dialOurs(relay.port, {
      moq: { serve: (r) => (r.path === "room/1" && r.track === "chat" ? producer : "not_found") },
    });
    publisher.announce("room/1");
    const proxy = startUdpProxy({
      targetPort: relay.port,
      toTarget: LOSSY,
      toClient: LOSSY,
      seed: 12,
    });
    const sent = new Set<number>();
    let sending = true;
    const subs = await subscriberPair(proxy.port, () => sending ? undefined : sent);
    producer.writeGroup(1, new TextEncoder().encode("g1"));
    await subs.warm(1);
    const deadline = AbortSignal.timeout(30_000);
    const readers = subs.start(deadline);
    for (let s = 2; s < GROUPS + 2; s++) {
      producer.writeGroup(s, new TextEncoder().encode(`g${s}`));
      sent.add(s);
      await pace();
    }
    sending = false;
    await Promise.all(readers.map((r) => r.done));
    const tallies = readers.map((r) => r.tally);
    report("subscriber link lossy", GROUPS, tallies, proxy);
    assertExactlyOnce(tallies, sent, (s) => `g${s}`);
    subs.close();
    publisher.close(0, "done");
    await proxy.close();
  }));
