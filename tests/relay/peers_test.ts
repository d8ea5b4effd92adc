// Relays dialing their PEERS in process, over real QUIC on loopback: names looked up again
// on redial, GOAWAY redirects that reuse a PEERS link or are dropped when done, and a dial
// timeout that leaves nothing behind.
import assert from "node:assert/strict";
import { TrackProducer, VERSIONS } from "../../src/moq/mod.ts";
import type { PeerEntry, RelayOptions } from "../../src/relay/mod.ts";
import { listenQuic } from "../../src/transport/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { dialOurs } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { startTestRelay, type TestRelay } from "../support/test_relay.ts";
import { until, within } from "../support/wait.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sessions a relay admitted as peers so far. */
const peerSessions = (t: TestRelay) =>
  t.relay.metrics.sessionsTotal.value({ transport: "quic", class: "peer" });

/** A relay that dials `peers` (auth off, so peers need no credential). */
function dialer(peers: PeerEntry[], extra: Partial<RelayOptions> = {}): Promise<TestRelay> {
  return startTestRelay({ extra: { name: "b", peers, ...extra } });
}

Deno.test("a PEERS name is looked up again on redial: a peer that moved is found at its new address", async () => {
  using _q = quiet();
  const first = await startTestRelay();
  const port = first.port;
  // The same relay's replacement, at another address with the same port.
  const moved = await startTestRelay({ extra: { hostname: "127.0.0.2", port } });
  let answer = "127.0.0.1";
  const lookups: string[] = [];
  const b = await dialer([{ host: "localhost", port }], {
    resolve: (host) => {
      lookups.push(host);
      return Promise.resolve([answer]);
    },
  });
  try {
    await until(() => b.relay.peers.links().some((l) => l.connected), "b to reach the first");
    assert.deepEqual(b.relay.peers.links().map((l) => l.label), [`127.0.0.1:${port}`]);
    answer = "127.0.0.2";
    await first.stop();
    await until(
      () => b.relay.peers.links().some((l) => l.label === `127.0.0.2:${port}` && l.connected),
      "b to reach the peer at its new address",
    );
    assert.deepEqual(b.relay.peers.links().map((l) => l.label), [`127.0.0.2:${port}`]);
    assert.equal(peerSessions(moved), 1);
    const ok = b.relay.metrics.peerDialAttemptsTotal.value({
      peer: `127.0.0.2:${port}`,
      result: "ok",
    });
    assert.equal(ok, 1);
    assert.ok(lookups.length >= 2, "looked up at start and again on redial");
  } finally {
    await b.stop();
    await moved.stop();
  }
});

Deno.test("a GOAWAY redirect to a relay already in PEERS uses that link, not a second session", async () => {
  using _q = quiet();
  const c = await startTestRelay();
  const a = await startTestRelay({ extra: { goawayUri: `moqt://127.0.0.1:${c.port}/` } });
  const b = await dialer([{ host: "127.0.0.1", port: a.port }, {
    host: "127.0.0.1",
    port: c.port,
  }]);
  try {
    await until(() => b.relay.peers.links().every((l) => l.connected), "b to reach a and c");
    assert.equal(peerSessions(c), 1);
    void a.relay.drain(2000);
    await until(() => b.logs.some((l) => l.includes("sent GOAWAY naming")), "b to hear GOAWAY");
    // Long enough for a second dial to c on loopback.
    await sleep(1000);
    assert.equal(peerSessions(c), 1, "c saw one peer session from b");
    assert.deepEqual(b.relay.peers.redirects(), []);
  } finally {
    await b.stop();
    await a.stop();
    await c.stop();
  }
});

Deno.test("a GOAWAY stand-in is dropped when the original peer is back", async () => {
  using _q = quiet();
  const c = await startTestRelay();
  const b = await startTestRelay({ extra: { name: "b" } });
  // Relay a dials b; when it drains it names c, and b dials c in its place.
  const a = await startTestRelay({
    extra: {
      name: "a",
      peers: [{ host: "127.0.0.1", port: b.port }],
      goawayUri: `moqt://127.0.0.1:${c.port}/`,
    },
  });
  let back: TestRelay | undefined;
  try {
    await until(() => a.relay.peers.links().some((l) => l.connected), "a to reach b");
    void a.relay.drain(500);
    await until(
      () => b.relay.peers.redirects().some((l) => l.connected),
      "b to dial c as a stand-in",
    );
    assert.equal(peerSessions(c), 1);
    await a.stop();
    // Relay a is back (a new process, a new port) and dials b again.
    back = await startTestRelay({
      extra: { name: "a", peers: [{ host: "127.0.0.1", port: b.port }] },
    });
    await until(() => b.relay.peers.redirects().length === 0, "the stand-in to be dropped");
    await until(
      () =>
        c.relay.metrics.sessionsClosedTotal.value({
          transport: "quic",
          class: "peer",
          reason: "closed",
        }) === 1,
      "c to see b leave",
    );
  } finally {
    await back?.stop();
    await b.stop();
    await c.stop();
  }
});

Deno.test("a GOAWAY stand-in is dropped once no route runs through it any more", async () => {
  using _q = quiet();
  const c = await startTestRelay();
  const producer = new TrackProducer({ cache: 8 });
  const publisher = await dialOurs(c.port, {
    moq: { serve: (r) => (r.path === "room/1" && r.track === "chat" ? producer : "not-found") },
  });
  const announced = publisher.announce("room/1");
  const a = await startTestRelay({ extra: { goawayUri: `moqt://127.0.0.1:${c.port}/` } });
  const b = await dialer([{ host: "127.0.0.1", port: a.port }]);
  try {
    await until(() => b.relay.peers.links().some((l) => l.connected), "b to reach a");
    void a.relay.drain(500);
    await until(
      () => b.relay.core.routes.get("room/1")?.hops === 1,
      "b to route room/1 through the stand-in",
    );
    assert.equal(b.relay.peers.redirects().length, 1);
    announced.withdraw();
    await until(() => b.relay.peers.redirects().length === 0, "the stand-in to be dropped");
    assert.ok(b.logs.some((l) => l.includes("no route runs through it any more; leaving it")));
  } finally {
    publisher.close(0, "done");
    await b.stop();
    await a.stop();
    await c.stop();
  }
});

Deno.test("a peer dial that gets no answer gives up at its timeout and leaves no handshake behind", async () => {
  using _q = quiet();
  // Takes UDP packets and never answers; notes which local port (which dial) sent each.
  const hole = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const from: { at: number; port: number }[] = [];
  const draining = (async () => {
    try {
      for (;;) {
        const [, addr] = await hole.receive();
        from.push({ at: performance.now(), port: (addr as Deno.NetAddr).port });
      }
    } catch {
      // closed at the end
    }
  })();
  const port = (hole.addr as Deno.NetAddr).port;
  const b = await dialer([{ host: "127.0.0.1", port }], { peerDialTimeoutMs: 300 });
  const failed = { peer: `127.0.0.1:${port}`, result: "error" };
  try {
    const started = performance.now();
    await until(
      () => b.relay.metrics.peerDialAttemptsTotal.value(failed) === 1,
      "the dial to fail",
    );
    const gaveUp = performance.now();
    assert.ok(gaveUp - started < 1000, "the dial gave up at its timeout");
    const firstDial = from[0]?.port;
    assert.ok(firstDial !== undefined, "the dial reached the port");
    // An abandoned handshake retransmits its Initial within about a second and a half.
    await sleep(2000);
    const late = from.filter((p) => p.port === firstDial && p.at > gaveUp + 50);
    assert.deepEqual(late, [], "the first dial sent nothing after it gave up");
  } finally {
    await b.stop();
    hole.close();
    await draining;
  }
});

Deno.test("a peer that completes QUIC but never speaks moq is left at the dial timeout", async () => {
  using _q = quiet();
  const cert = await testCertificate();
  const silent = listenQuic({ alpn: VERSIONS, cert: cert.certPem, key: cert.keyPem });
  const accepted = silent[Symbol.asyncIterator]().next();
  const b = await dialer([{ host: "127.0.0.1", port: silent.addr.port }], {
    peerDialTimeoutMs: 300,
  });
  try {
    const started = performance.now();
    const session = (await accepted).value!;
    const info = await within(session.closed, 3000, "b to close the silent session") as {
      reason: string;
    };
    assert.ok(performance.now() - started < 1500, "closed at the dial timeout");
    assert.equal(info.reason, "dial timed out");
    await until(
      () =>
        b.relay.metrics.peerDialAttemptsTotal.value({
          peer: `127.0.0.1:${silent.addr.port}`,
          result: "error",
        }) === 1,
      "the dial to count as failed",
    );
  } finally {
    await b.stop();
    silent.stop();
  }
});
