// The funnel goes away for a few seconds while subscribers on its relay keep
// their subscriptions (ours and @moq/net, which never resubscribes): its link
// goes silent, or its process is killed with SIGKILL and restarted a few
// seconds later. At shipped defaults every acknowledged record still
// reaches each of them exactly once: the relay keeps their tracks until the
// funnel is back (RELAY_PUBLISHER_GRACE_MS) and fetches what was committed
// meanwhile. With the old 2 s grace, shorter than the funnel's own redial
// delay, both subscribers stopped at the outage.
import assert from "node:assert/strict";
import { assertExactlyOnce, report, subscriberPair } from "../../support/delivery.ts";
import { type LinkShape, startUdpProxy } from "../../support/udp_proxy.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { testCertificateFiles } from "../../support/certs.ts";
import { quiet } from "../../support/quiet.ts";
import { spawnServer } from "../../support/processes.ts";
import { until } from "../../support/wait.ts";
import { post, send, startLiveFunnel } from "../../support/live_funnel.ts";
import { startMeshRelay, stopMesh } from "../../relay/mesh/_mesh.ts";
import { freeUdpTcpPort } from "../../../src/transport/mod.ts";
import { sleep } from "../../../src/timers/mod.ts";

const TRACK = "room/1/chat";
/** How long after the last acknowledgement every subscriber must have every record. */
const DELIVERY_DEADLINE_MS = 30_000;
/** The group sequence of an acknowledged record: ledger sequence + 1. */
const sequenceOf = (group: string) => Number(group.split("-g")[1]) + 1;
const textOf = (n: number) => `{"payload":{"n":${n}}}`;

/**
 * Subscribes a pair on the relay at `relayPort`, then posts `records` records
 * one every `everyMs` to `base()`, calling `outage()` once a third are in;
 * POSTs that fail while the funnel is away are retried. Asserts that each of
 * the pair got every acknowledged record exactly once.
 */
async function postThroughOutage(
  what: string,
  base: () => string,
  relayPort: number,
  outage: () => Promise<void>,
  records = 90,
  everyMs = 20,
): Promise<void> {
  const acks = new Map<number, number>();
  let posting = true;
  const expected = new Set<number>();
  const pair = await subscriberPair(relayPort, () => posting ? undefined : expected);
  const warm = await post(base(), TRACK, `"warm-up"`);
  assert.equal(warm.status, 201);
  await pair.warm(sequenceOf(warm.group));
  const stop = new AbortController();
  const readers = pair.start(stop.signal);
  let outageDone: Promise<void> | undefined;
  for (let n = 0; n < records; n++) {
    if (n === Math.floor(records / 3)) outageDone = outage();
    for (;;) {
      const r = await post(base(), TRACK, JSON.stringify({ n })).catch(() => undefined);
      if (r?.status === 201) {
        acks.set(sequenceOf(r.group), n);
        break;
      }
      await sleep(100); // the funnel is away: a sender retries
    }
    await sleep(everyMs);
  }
  await outageDone;
  for (const s of acks.keys()) expected.add(s);
  posting = false;
  const deadline = setTimeout(() => stop.abort(), DELIVERY_DEADLINE_MS);
  await Promise.all(readers.map((r) => r.done));
  clearTimeout(deadline);
  pair.close();
  const tallies = readers.map((r) => r.tally);
  report(what, acks.size, tallies);
  assertExactlyOnce(tallies, expected, (s) => textOf(acks.get(s)!));
}

Deno.test("the funnel's relay link silent for 3 s: relay subscribers keep their tracks and get every record once", async () => {
  using _q = quiet();
  // The relay at its shipped timings (grace, idle, RTT), the funnel at its own (idle 1 s, redial 2 s).
  const relay = await startTestRelay({ shippedTimings: true });
  const files = await testCertificateFiles();
  const proxy = startUdpProxy({ targetPort: relay.port, seed: 11 });
  const funnel = await startLiveFunnel({
    FUNNEL_SERVE_ADDR: "none",
    RELAY_URL: `moqt://127.0.0.1:${proxy.port}/`,
    RELAY_CA_FILE: files.cert,
  });
  try {
    assert.equal(await send(funnel.base, "PUT", `/tracks/${TRACK}`), 201);
    await postThroughOutage("link silent for 3 s", () => funnel.base, relay.port, async () => {
      proxy.reshape("toTarget", { silent: true });
      proxy.reshape("toClient", { silent: true });
      await sleep(3000);
      proxy.reshape("toTarget", {});
      proxy.reshape("toClient", {});
    });
  } finally {
    await funnel[Symbol.asyncDispose]();
    await proxy.close();
    await relay.stop();
    await Deno.remove(files.dir, { recursive: true });
  }
});

// The link is lossy as well (lossy_link_test.ts's shape): groups are in flight, or waiting for a
// retransmission, when it goes silent, and the relay's FETCH of them through the dying session
// fails. Such a group is asked for again once the funnel is back; it used to count as lost at the
// first failure: 1 or 2 of 150 records never reached either subscriber for four seeds of six,
// among them these two.
for (const seed of [1, 3]) {
  Deno.test(`a lossy funnel link silent for 1.5 s (seed ${seed}): the relay fetches again what it could not, every record once`, async () => {
    using _q = quiet();
    const lossy: LinkShape = { loss: 0.05, delayMs: 50, jitterMs: 5, reorder: 0.02 };
    const relay = await startTestRelay({ shippedTimings: true });
    const files = await testCertificateFiles();
    const proxy = startUdpProxy({ targetPort: relay.port, toTarget: lossy, toClient: lossy, seed });
    const funnel = await startLiveFunnel({
      FUNNEL_SERVE_ADDR: "none",
      RELAY_URL: `moqt://127.0.0.1:${proxy.port}/`,
      RELAY_CA_FILE: files.cert,
    });
    try {
      assert.equal(await send(funnel.base, "PUT", `/tracks/${TRACK}`), 201);
      const what = `lossy link silent for 1.5 s, seed ${seed}`;
      await postThroughOutage(
        what,
        () => funnel.base,
        relay.port,
        async () => {
          proxy.reshape("toTarget", { silent: true });
          proxy.reshape("toClient", { silent: true });
          await sleep(1500);
          proxy.reshape("toTarget", lossy);
          proxy.reshape("toClient", lossy);
        },
        150,
        5,
      );
    } finally {
      await funnel[Symbol.asyncDispose]();
      await proxy.close();
      await relay.stop();
      await Deno.remove(files.dir, { recursive: true });
    }
  });
}

Deno.test("the funnel process killed with SIGKILL and restarted 4 s later: relay subscribers get every record once", async () => {
  using _q = quiet();
  const files = await testCertificateFiles();
  const relay = await startMeshRelay("a", files); // a relay process at shipped defaults
  const ledger = await Deno.makeTempDir({ prefix: "sluice-outage-" });
  const port = freeUdpTcpPort();
  const env = {
    FUNNEL_ADDR: `127.0.0.1:${port}`,
    FUNNEL_SERVE_ADDR: "none",
    LEDGER_URI: `file://${ledger}`,
    RELAY_URL: `moqt://localhost:${relay.port}/`,
    RELAY_CA_FILE: files.cert,
  };
  const base = `http://127.0.0.1:${port}`;
  const up = () =>
    until(async () => (await send(base, "GET", "/health").catch(() => 0)) === 200, "the funnel");
  let funnel = spawnServer("funnel", { env });
  try {
    await up();
    assert.equal(await send(base, "PUT", `/tracks/${TRACK}`), 201);
    await until(async () => (await relay.routes()).some((r) => r.path === "/room/1"), "the route");
    await postThroughOutage(
      "funnel SIGKILLed, restarted 4 s later",
      () => base,
      relay.port,
      async () => {
        await funnel.kill();
        // RestartSec=2 in deploy/sluice-funnel@.service, plus a slow start or a deploy's copy.
        await sleep(4000);
        funnel = spawnServer("funnel", { env });
        await up();
      },
    );
  } finally {
    await funnel.kill();
    await stopMesh([relay], files);
    await Deno.remove(ledger, { recursive: true });
  }
});
