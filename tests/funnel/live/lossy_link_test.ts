// The funnel on lossy, slow, reordering links (a userspace UDP proxy: 5% of
// datagrams dropped and 50 ms delay each way, a few held back so later ones
// overtake): every acknowledged record reaches every subscriber exactly once,
// through sluice relay and from the funnel's own listener.
import assert from "node:assert/strict";
import { assertExactlyOnce, report, subscriberPair } from "../../support/delivery.ts";
import { type LinkShape, startUdpProxy } from "../../support/udp_proxy.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { testCertificateFiles } from "../../support/certs.ts";
import { quiet } from "../../support/quiet.ts";
import { post, send, startLiveFunnel } from "../../support/live_funnel.ts";

const RECORDS = 200;
const SENDERS = 4;
/** How long after the last acknowledgement every subscriber must have every record. */
const DELIVERY_DEADLINE_MS = 30_000;
const LOSSY: LinkShape = { loss: 0.05, delayMs: 50, jitterMs: 5, reorder: 0.02 };

/** The group sequence of an acknowledged record: ledger sequence + 1. */
const sequenceOf = (group: string) => Number(group.split("-g")[1]) + 1;

/**
 * Subscribes a pair (ours, @moq/net) on `port`, posts one record both must
 * receive, then RECORDS more from SENDERS concurrent senders while they read;
 * returns what was acknowledged and what each received.
 */
async function postWhileReading(base: string, port: number) {
  const acks = new Set<number>();
  const texts = new Map<number, string>();
  let posting = true;
  const pair = await subscriberPair(port, () => posting ? undefined : acks);
  const warm = await post(base, "room/1/chat", `"warm-up"`);
  assert.equal(warm.status, 201);
  await pair.warm(sequenceOf(warm.group));
  const stop = new AbortController();
  const readers = pair.start(stop.signal);
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: SENDERS }, async () => {
    while (next < RECORDS) {
      const n = next++;
      const r = await post(base, "room/1/chat", JSON.stringify({ n }));
      assert.equal(r.status, 201);
      acks.add(sequenceOf(r.group));
      texts.set(sequenceOf(r.group), `{"payload":{"n":${n}}}`);
    }
  }));
  posting = false;
  // The readers' deadline runs from the last acknowledgement, not from the first POST: on a
  // starved CPU (the whole suite in parallel on two cores) posting alone has taken over 30 s, and a
  // deadline from the start then counted the records still being posted as lost.
  const posted = performance.now();
  const deadline = setTimeout(() => stop.abort(), DELIVERY_DEADLINE_MS);
  await Promise.all(readers.map((r) => r.done));
  clearTimeout(deadline);
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  console.log(
    `posted in ${seconds(posted - started)}; ` +
      `the last subscriber done ${
        seconds(performance.now() - posted)
      } after the last acknowledgement`,
  );
  pair.close();
  return { acknowledged: acks, texts, tallies: readers.map((r) => r.tally) };
}

Deno.test("funnel → lossy link → relay: every acknowledged record reaches every subscriber once", async () => {
  using _q = quiet();
  const relay = await startTestRelay({ shippedTimings: true });
  const files = await testCertificateFiles();
  const proxy = startUdpProxy({
    targetPort: relay.port,
    toTarget: LOSSY,
    toClient: LOSSY,
    seed: 7,
  });
  const funnel = await startLiveFunnel({
    FUNNEL_SERVE_ADDR: "none",
    RELAY_URL: `moqt://127.0.0.1:${proxy.port}/`,
    RELAY_CA_FILE: files.cert,
  });
  try {
    assert.equal(await send(funnel.base, "PUT", "/tracks/room/1/chat"), 201);
    const { acknowledged, texts, tallies } = await postWhileReading(funnel.base, relay.port);
    report("funnel → relay link lossy", acknowledged.size, tallies, proxy);
    assertExactlyOnce(tallies, acknowledged, (s) => texts.get(s)!);
  } finally {
    await funnel[Symbol.asyncDispose]();
    await proxy.close();
    await relay.stop();
    await Deno.remove(files.dir, { recursive: true });
  }
});

Deno.test("funnel's own listener → lossy link → subscribers: every acknowledged record arrives once", async () => {
  using _q = quiet();
  await using funnel = await startLiveFunnel();
  const proxy = startUdpProxy({
    targetPort: funnel.moqPort,
    toTarget: LOSSY,
    toClient: LOSSY,
    seed: 8,
  });
  try {
    assert.equal(await send(funnel.base, "PUT", "/tracks/room/1/chat"), 201);
    const { acknowledged, texts, tallies } = await postWhileReading(funnel.base, proxy.port);
    report("listener → subscriber link lossy", acknowledged.size, tallies, proxy);
    assertExactlyOnce(tallies, acknowledged, (s) => texts.get(s)!);
  } finally {
    await proxy.close();
  }
});
