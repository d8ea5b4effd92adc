/**
 * A subscriber that opens many subscriptions and never reads a data stream:
 * what the serving session holds for it is bounded per session, not only per
 * subscription. Each served subscription holds up to 8 MiB of group bytes
 * (and one group however large) in writes the subscriber never takes, and an
 * IETF session may hold 1024 subscriptions (several to one track): without
 * the session's bound one session of a ~30-byte SUBSCRIBE each pinned 16 MiB
 * per subscription (2 GiB for 128, measured), gigabytes of copies of one
 * track's groups.
 */
import assert from "node:assert/strict";
import { acceptIetf, IETF_VERSION, ietfCodec as c, TrackProducer } from "../../../src/moq/mod.ts";
import { SESSION_BYTES_IN_FLIGHT } from "../../../src/moq/session/mod.ts";
import { StreamReader } from "../../../src/wire/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { within } from "../../support/wait.ts";

const MiB = 1 << 20;
const SUBSCRIPTIONS = 32;
// Large groups: the subscriber's QUIC stack takes a few MiB of each stream unread, the rest
// stays in the server's writes.
const GROUP = 4 * MiB;
// A group being sent is held twice (the one write's bytes, and the transport's copy of them).
const SESSION_BOUND = 2 * SESSION_BYTES_IN_FLIGHT + 2 * GROUP;

Deno.test("ietf: a subscriber that never reads 32 subscriptions to one track pins at most a session's bound", async () => {
  const track = new TrackProducer({ cache: 32, cacheBytes: 1 << 30 });
  for (let i = 0; i < 16; i++) track.writeGroup(i, new Uint8Array(GROUP));
  const pair = await quicPair("moq-00");
  const serverP = acceptIetf(pair.server, { log: () => {}, serve: () => track });
  const stream = await pair.client.openBidi();
  const w = stream.writable.getWriter();
  const r = new StreamReader(stream.readable);
  const send = (type: number, body: Uint8Array) => w.write(c.frameControl(type, body));
  const next = async () => (await within(c.readControl(r), 5000, "a control message"))!;
  try {
    await send(
      c.Msg.ClientSetup,
      c.encodeClientSetup({
        versions: [IETF_VERSION[14]],
        params: new Map([[c.SetupParam.MaxRequestId, 1n << 20n]]),
      }, 14),
    );
    assert.equal((await next()).type, c.Msg.ServerSetup);
    await serverP;
    assert.equal((await next()).type, c.Msg.SubscribeNamespace);
    const before = Deno.memoryUsage().external;
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      await send(
        c.Msg.Subscribe,
        c.encodeSubscribe({
          requestId: BigInt(i * 2),
          path: "feed",
          track: "t",
          priority: 0,
          groupOrder: 0,
          forward: true,
          filter: { kind: "absolute", startGroup: 0, startObject: 0 },
        }, 14),
      );
    }
    for (let oks = 0; oks < SUBSCRIPTIONS;) if ((await next()).type === c.Msg.SubscribeOk) oks++;
    // Every subscription has started what it may (the writes it starts are immediate).
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const held = Deno.memoryUsage().external - before;
    assert.ok(
      held <= SESSION_BOUND,
      `the session holds ${(held / MiB).toFixed(0)} MiB for a subscriber that reads nothing`,
    );
  } finally {
    await pair.stop();
  }
});
