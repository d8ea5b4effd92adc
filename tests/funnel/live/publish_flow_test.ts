// The funnel's own listener, its relay session and a relay's fan-out are flow
// controlled: a burst of concurrent POSTs, each record acknowledged, reaches
// every subscriber that keeps up, on the listener, on the relay and on the far
// relay of a mesh, whole, each record once (sent in sequence order). The funnel runs as a real child process at its shipped
// defaults with auth off, publishing through `sluice relay` as well (the POSTs
// come from this process, as from any client). The subscribers are raw @moq/net ones, which
// repair nothing of their own: what they get is what was sent. A subscriber
// that stops reading is skipped once it is slower than the track, and that
// skip is counted in the funnel's metrics, while the others get everything.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { freeUdpTcpPort } from "../../../src/transport/mod.ts";
import { testCertificateFiles } from "../../support/certs.ts";
import { collect, netReader, oursReader, type Tally } from "../../support/delivery.ts";
import { post, send } from "../../support/live_funnel.ts";
import { dialNet, dialOurs, seeAnnounced, stallable } from "../../support/moq.ts";
import { families, sampleValue } from "../../support/prometheus.ts";
import { quiet } from "../../support/quiet.ts";
import { type ServerProcess, startServer } from "../../support/processes.ts";
import { within } from "../../support/wait.ts";
import { RECORD_LAG_MS } from "../../../src/funnel/mod.ts";
import { FLOW_LAG_MS } from "../../../src/relay/mod.ts";
import {
  meshCertificate,
  type MeshRelay,
  startMeshRelay,
  stopMesh,
} from "../../relay/mesh/_mesh.ts";

const BURST = 1500;

/** A server process and where it answers. */
interface Server {
  readonly process: ServerProcess;
  readonly line: (prefix: string) => string;
}

async function start(command: "relay" | "funnel", env: Record<string, string>): Promise<Server> {
  const p = await startServer(command, { env });
  return { process: p, line: (prefix) => p.lines.find((l) => l.startsWith(prefix)) ?? "" };
}

async function stop(s: Server | undefined): Promise<void> {
  await s?.process.stop();
}

/** The funnel's ingest URL, from its "Ingest:" line. */
function ingestBase(funnel: Server): string {
  return /Ingest: (http:\/\/\S+)/.exec(funnel.line("Ingest:"))![1]!;
}

/** A funnel publishing through the relay at `relayPort`, with no listener of its own. */
function startFunnelAt(relayPort: number, cert: string): Promise<Server> {
  return start("funnel", {
    FUNNEL_ADDR: "127.0.0.1:0",
    FUNNEL_SERVE_ADDR: "none",
    RELAY_URL: `moqt://localhost:${relayPort}/`,
    RELAY_CA_FILE: cert,
  });
}

/** Creates track room/1/chat and waits until the relay at `relayPort` routes room/1. */
async function createRouted(base: string, relayPort: number): Promise<void> {
  assert.equal(await send(base, "PUT", "/tracks/room/1/chat"), 201);
  await routed(relayPort, "room/1");
}

/** The relay and the funnel publishing through it, with its own listener. */
async function startBoth(files: { cert: string; key: string }) {
  const relayPort = freeUdpTcpPort();
  const relay = await start("relay", {
    RELAY_ADDR: `127.0.0.1:${relayPort}`,
    CERT_FILE: files.cert,
    KEY_FILE: files.key,
  });
  let funnel: Server | undefined;
  try {
    funnel = await start("funnel", {
      FUNNEL_ADDR: "127.0.0.1:0",
      FUNNEL_SERVE_ADDR: "127.0.0.1:0",
      CERT_FILE: files.cert,
      KEY_FILE: files.key,
      RELAY_URL: `moqt://localhost:${relayPort}/`,
      RELAY_CA_FILE: files.cert,
    });
  } catch (e) {
    await stop(relay);
    throw e;
  }
  const base = ingestBase(funnel);
  const moqPort = Number(/moqt:\/\/127\.0\.0\.1:(\d+)/.exec(funnel.line("Serve:"))![1]);
  return { relay, funnel, relayPort, base, moqPort };
}

/** Posts `n` records at once; the body of each acknowledged one by group sequence (seq + 1). */
async function burst(base: string, path: string, n: number): Promise<Map<number, string>> {
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const body = JSON.stringify({ i });
      const { group, status } = await post(base, path, body);
      return { status, body, seq: group ? Number(group.split("-g")[1]) + 1 : -1 };
    }),
  );
  const ms = performance.now() - started;
  console.log(`${n} concurrent POSTs acknowledged in ${ms.toFixed(0)} ms`);
  const acked = new Map<number, string>();
  for (const a of answers) if (a.status === 201) acked.set(a.seq, `{"payload":${a.body}}`);
  assert.equal(acked.size, n, "every POST was acknowledged");
  return acked;
}

function assertWhole(where: string, tally: Tally, acked: Map<number, string>): void {
  const missing = tally.missing(acked.keys());
  assert.equal(missing.length, 0, `${where}: ${missing.length} acknowledged records missing`);
  assert.deepEqual(tally.duplicates(), [], `${where}: no duplicates`);
  // Sent in sequence order, one stream per group with ordered priorities; the streams of a
  // subscriber may still complete out of order (a receiver orders by group sequence).
  console.log(`${where}: ${tally.outOfOrder()} of ${tally.got.length} arrived after a later one`);
  for (const [seq, text] of acked) assert.equal(tally.texts.get(seq), text, `${where}: ${seq}`);
}

async function skips(base: string, sink: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return sampleValue(families(text), "sluice_funnel_subscriber_skips_total", { sink }) ?? 0;
}

/** Waits until `port`'s relay routes `path` (the funnel announced it there). */
async function routed(port: number, path: string): Promise<void> {
  const watcher = await dialOurs(port);
  try {
    await within(seeAnnounced(watcher, path), 10_000, `${path} announced on the relay`);
  } finally {
    watcher.close(0, "");
  }
}

Deno.test(`${BURST} concurrent POSTs: every acknowledged record reaches @moq/net on the listener and on the relay, once`, async () => {
  using _q = quiet();
  const files = await testCertificateFiles();
  const { relay, funnel, relayPort, base, moqPort } = await startBoth(files);
  const onListener = await dialNet(moqPort);
  const onRelay = await dialNet(relayPort);
  try {
    await createRouted(base, relayPort);
    await post(base, "room/1/chat", '"warm-up"');
    const subs = [onListener, onRelay].map((c) =>
      c.consume(Net.Path.from("room/1")).track("chat").subscribe({})
    );
    // Both subscribers are served once the warm-up record (group 1) reached them.
    for (const sub of subs) assert.equal((await sub.recvGroup())?.sequence, 1);

    // Set once the burst is acknowledged: the readers run while it is being sent.
    const sent: { acked?: Map<number, string> } = {};
    const expected = () => sent.acked && new Set(sent.acked.keys());
    const deadline = AbortSignal.timeout(90_000);
    const listener = collect(netReader(subs[0]!), expected, deadline);
    const viaRelay = collect(netReader(subs[1]!), expected, deadline);
    const acked = sent.acked = await burst(base, "room/1/chat", BURST);
    await listener.done;
    assertWhole("listener", listener.tally, acked);
    await viaRelay.done;
    assertWhole("through the relay", viaRelay.tally, acked);
    assert.equal(await skips(base, "listener"), 0, "no subscriber of the listener skipped");
    for (const sub of subs) sub.close();
  } finally {
    onListener.close();
    onRelay.close();
    await stop(funnel);
    await stop(relay);
    await Deno.remove(files.dir, { recursive: true });
  }
});

Deno.test(`${BURST} concurrent POSTs through a mesh of three relays: @moq/net on the far relay gets every acknowledged record once`, async () => {
  using _q = quiet();
  const files = await meshCertificate();
  const relays: MeshRelay[] = [];
  let funnel: Server | undefined;
  let net: Awaited<ReturnType<typeof dialNet>> | undefined;
  try {
    // The funnel publishes at A; C reaches it through B (A <- B <- C).
    const a = await startMeshRelay("relay-a", files);
    relays.push(a);
    const b = await startMeshRelay("relay-b", files, [a]);
    relays.push(b);
    const c = await startMeshRelay("relay-c", files, [b]);
    relays.push(c);
    funnel = await startFunnelAt(a.port, files.cert);
    const base = ingestBase(funnel);
    await createRouted(base, c.port);
    net = await dialNet(c.port);
    const sub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    await post(base, "room/1/chat", '"warm-up"');
    assert.equal((await within(sub.recvGroup(), 10_000, "the warm-up record"))?.sequence, 1);

    const sent: { acked?: Map<number, string> } = {};
    const far = collect(
      netReader(sub),
      () => sent.acked && new Set(sent.acked.keys()),
      AbortSignal.timeout(90_000),
    );
    const acked = sent.acked = await burst(base, "room/1/chat", BURST);
    await far.done;
    assertWhole("on the far relay", far.tally, acked);
    for (const r of relays) {
      assert.equal(await r.metric("subscriber_skips_total"), 0, `nothing skipped on ${r.name}`);
    }
    sub.close();
  } finally {
    net?.close();
    await stop(funnel);
    await stopMesh(relays, files);
  }
});

Deno.test("a listener subscriber that stops reading is skipped once slower than the track, counted, while the others get everything", async () => {
  using _q = quiet();
  const files = await testCertificateFiles();
  const { relay, funnel, relayPort, base, moqPort } = await startBoth(files);
  const fast = await dialNet(moqPort);
  const fast2 = await dialNet(moqPort, { webTransport: true });
  let gate!: ReturnType<typeof stallable>;
  // Few concurrent uni streams: a reader that stops accepting them stalls the funnel's sends.
  const slow = await dialOurs(moqPort, { maxUni: 2, wrap: (s) => (gate = stallable(s)).session });
  try {
    await createRouted(base, relayPort);
    await post(base, "room/1/chat", '"warm-up"');
    const fastSub = fast.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    const fast2Sub = fast2.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    const slowSub = slow.subscribe("room/1", "chat");
    await slowSub.ready;
    for (const sub of [fastSub, fast2Sub]) assert.equal((await sub.recvGroup())?.sequence, 1);
    const slowNext = oursReader(slowSub);
    assert.equal((await slowNext())?.sequence, 1);

    gate.hold();
    // Set once the burst is acknowledged: the readers run while it is being sent.
    const sent: { acked?: Map<number, string> } = {};
    const deadline = AbortSignal.timeout(120_000);
    const readers = [fastSub, fast2Sub].map((sub) =>
      collect(netReader(sub), () => sent.acked && new Set(sent.acked.keys()), deadline)
    );
    const acked = sent.acked = await burst(base, "room/1/chat", 300);
    await Promise.all(readers.map((r) => r.done));
    assertWhole("listener", readers[0]!.tally, acked);
    assertWhole("listener, WebTransport", readers[1]!.tally, acked);
    // Behind, but not yet slower than the track: nothing is skipped.
    assert.equal(await skips(base, "listener"), 0);
    // The shipped lag bound passes; one more record, and the stalled one reads again.
    await new Promise((r) => setTimeout(r, RECORD_LAG_MS + 1000));
    const last = (await post(base, "room/1/chat", '"last"')).group;
    const lastSeq = Number(last.split("-g")[1]) + 1;
    gate.release();
    const slowGot: number[] = [];
    while (slowGot.at(-1) !== lastSeq) {
      const g = await within(slowNext(), 30_000, "the stalled subscriber's next group");
      slowGot.push(g!.sequence);
    }
    assert.ok(slowGot.length < 300, `the stalled subscriber skipped (got ${slowGot.length})`);
    assert.equal(await skips(base, "listener"), 1, "the skip is counted");
    fastSub.close();
    fast2Sub.close();
  } finally {
    fast.close();
    fast2.close();
    slow.close(0, "");
    await stop(funnel);
    await stop(relay);
    await Deno.remove(files.dir, { recursive: true });
  }
});

Deno.test("a relay subscriber that stops reading is skipped once slower than the track, counted in the relay's metrics, while the other gets everything", async () => {
  using _q = quiet();
  const files = await meshCertificate();
  const relays: MeshRelay[] = [];
  let funnel: Server | undefined;
  let gate!: ReturnType<typeof stallable>;
  let fast: Awaited<ReturnType<typeof dialNet>> | undefined;
  let slow: Awaited<ReturnType<typeof dialOurs>> | undefined;
  try {
    const relay = await startMeshRelay("relay", files);
    relays.push(relay);
    funnel = await startFunnelAt(relay.port, files.cert);
    const base = ingestBase(funnel);
    await createRouted(base, relay.port);
    fast = await dialNet(relay.port);
    // Few concurrent uni streams: a reader that stops accepting them stalls the relay's sends.
    slow = await dialOurs(relay.port, { maxUni: 2, wrap: (s) => (gate = stallable(s)).session });
    const fastSub = fast.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    const slowSub = slow.subscribe("room/1", "chat");
    await slowSub.ready;
    await post(base, "room/1/chat", '"warm-up"');
    assert.equal((await within(fastSub.recvGroup(), 10_000, "the warm-up"))?.sequence, 1);
    const slowNext = oursReader(slowSub);
    assert.equal((await slowNext())?.sequence, 1);

    gate.hold();
    const sent: { acked?: Map<number, string> } = {};
    const reader = collect(
      netReader(fastSub),
      () => sent.acked && new Set(sent.acked.keys()),
      AbortSignal.timeout(90_000),
    );
    const acked = sent.acked = await burst(base, "room/1/chat", 300);
    await reader.done;
    assertWhole("on the relay", reader.tally, acked);
    // Behind, but not yet slower than the track: nothing is skipped.
    assert.equal(await relay.metric("subscriber_skips_total"), 0);
    // The relay's lag bound passes; one more record, and the stalled one reads again.
    await new Promise((r) => setTimeout(r, FLOW_LAG_MS + 1000));
    const lastSeq = Number((await post(base, "room/1/chat", '"last"')).group.split("-g")[1]) + 1;
    gate.release();
    const slowGot: number[] = [];
    while (slowGot.at(-1) !== lastSeq) {
      const g = await within(slowNext(), 30_000, "the stalled subscriber's next group");
      slowGot.push(g!.sequence);
    }
    assert.ok(slowGot.length < 300, `the stalled subscriber skipped (got ${slowGot.length})`);
    assert.equal(await relay.metric("subscriber_skips_total"), 1, "the skip is counted");
    fastSub.close();
  } finally {
    fast?.close();
    slow?.close(0, "");
    await stop(funnel);
    await stopMesh(relays, files);
  }
});

Deno.test("the funnel SIGKILLed mid-burst: after the restart, a subscriber from group 1 gets every acknowledged record once", async () => {
  using _q = quiet();
  const files = await testCertificateFiles();
  const env = {
    FUNNEL_ADDR: "127.0.0.1:0",
    FUNNEL_SERVE_ADDR: "127.0.0.1:0",
    CERT_FILE: files.cert,
    KEY_FILE: files.key,
    LEDGER_URI: `file://${files.dir}/ledger`,
  };
  let funnel: Server | undefined = await start("funnel", env);
  try {
    let base = ingestBase(funnel);
    assert.equal(await send(base, "PUT", "/tracks/room/1/chat"), 201);
    // The burst; the funnel process is killed once 300 POSTs were acknowledged.
    const acked = new Map<number, string>();
    const killed = funnel;
    await Promise.all(Array.from({ length: BURST }, async (_, i) => {
      const body = JSON.stringify({ i });
      const r = await post(base, "room/1/chat", body).catch(() => undefined);
      if (r?.status !== 201) return;
      acked.set(Number(r.group.split("-g")[1]) + 1, `{"payload":${body}}`);
      if (acked.size === 300) killed.process.signal("SIGKILL");
    }));
    await killed.process.stop("SIGKILL");
    assert.ok(
      acked.size >= 300 && acked.size < BURST,
      `${acked.size} acknowledged before the kill`,
    );

    funnel = await start("funnel", env);
    base = ingestBase(funnel);
    const moqPort = Number(/moqt:\/\/127\.0\.0\.1:(\d+)/.exec(funnel.line("Serve:"))![1]);
    const moq = await dialOurs(moqPort);
    try {
      // Far more than the listener keeps in memory: read back from the ledger, in order.
      const sub = moq.subscribe("room/1", "chat", { start: 1 });
      const reader = collect(
        oursReader(sub),
        () => new Set(acked.keys()),
        AbortSignal.timeout(60_000),
      );
      await reader.done;
      assertWhole("after the restart", reader.tally, acked);
      assert.equal(await skips(base, "listener"), 0);
    } finally {
      moq.close(0, "");
    }
  } finally {
    await stop(funnel);
    await Deno.remove(files.dir, { recursive: true });
  }
});
