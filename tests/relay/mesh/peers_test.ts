// Relays dialing their PEERS in process, over real QUIC on loopback: names looked up again
// on redial, GOAWAY redirects that use a PEERS link and never dial one of their own, and a
// dial timeout that leaves nothing behind.
import assert from "node:assert/strict";
import { sleep } from "../../../src/timers/mod.ts";
import { VERSIONS } from "../../../src/moq/mod.ts";
import type { PeerEntry, RelayOptions } from "../../../src/relay/mod.ts";
import { freeUdpTcpPort, listenQuic } from "../../../src/transport/mod.ts";
import { testCertificate } from "../../support/certs.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay, type TestRelay } from "../../support/test_relay.ts";
import { settled, until, within } from "../../support/wait.ts";
import { peerDials } from "./_peer_dials.ts";

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
  const dials = await peerDials();
  const b = await dialer([{ host: "127.0.0.1", port: a.port }, {
    host: "127.0.0.1",
    port: c.port,
  }], { peerTransport: dials.transport });
  const toC = () => dials.started.filter((host) => host === `127.0.0.1:${c.port}`).length;
  try {
    await until(() => b.relay.peers.links().every((l) => l.connected), "b to reach a and c");
    assert.equal(peerSessions(c), 1);
    assert.equal(toC(), 1);
    void a.relay.drain(2000);
    await until(() => b.logs.some((l) => l.includes("sent GOAWAY naming")), "b to hear GOAWAY");
    await until(() => b.logs.some((l) => l.includes("using that link")), "b to keep its link");
    await settled();
    assert.equal(toC(), 1, "b started no second dial to c");
    assert.equal(peerSessions(c), 1, "c saw one peer session from b");
    assert.equal(b.relay.peers.links().length, 2, "the two PEERS links and no other");
  } finally {
    await b.stop();
    await a.stop();
    await c.stop();
  }
});

Deno.test("a PEERS name with two addresses is dialed at both, and a GOAWAY naming it uses those links", async () => {
  using _q = quiet();
  const port = freeUdpTcpPort();
  // The first names the same PEERS entry (both its addresses) when it drains.
  const goawayUri = `moqt://localhost:${port}/`;
  const one = await startTestRelay({ extra: { name: "one", port, goawayUri } });
  const two = await startTestRelay({ extra: { name: "two", hostname: "127.0.0.2", port } });
  const dials = await peerDials();
  const b = await dialer([{ host: "localhost", port }], {
    resolve: () => Promise.resolve(["127.0.0.1", "127.0.0.2"]),
    peerTransport: dials.transport,
  });
  try {
    await until(
      () => b.relay.peers.links().filter((l) => l.connected).length === 2,
      "b to reach both addresses",
    );
    assert.deepEqual(b.relay.peers.links().map((l) => l.label).sort(), [
      `127.0.0.1:${port}`,
      `127.0.0.2:${port}`,
    ]);
    void one.relay.drain(2000);
    await until(() => b.logs.some((l) => l.includes("using that link")), "b to keep its link");
    await settled();
    assert.deepEqual(
      dials.started.toSorted(),
      [`127.0.0.1:${port}`, `127.0.0.2:${port}`],
      "one dial to each address, none on the redirect",
    );
    assert.equal(peerSessions(one), 1);
    assert.equal(peerSessions(two), 1, "the other address saw one peer session from b");
    assert.equal(b.relay.peers.links().length, 2, "the two addresses' links and no other");
  } finally {
    await b.stop();
    await one.stop();
    await two.stop();
  }
});

Deno.test("a GOAWAY redirect to a PEERS name that has not resolved yet dials its PEERS link at once, and no second session", async () => {
  using _q = quiet();
  const c = await startTestRelay();
  const a = await startTestRelay({ extra: { goawayUri: `moqt://localhost:${c.port}/` } });
  // The name of b's second peer does not resolve until the test says so.
  let resolves = false;
  let lookups = 0;
  const dials = await peerDials();
  const b = await dialer(
    [{ host: "127.0.0.1", port: a.port }, { host: "localhost", port: c.port }],
    {
      resolve: (host) => {
        if (host !== "localhost") return Promise.resolve([host]);
        lookups++;
        return resolves
          ? Promise.resolve(["127.0.0.1"])
          : Promise.reject(new Error("no such host"));
      },
      peerTransport: dials.transport,
    },
  );
  const unresolved = () => b.logs.filter((l) => l.includes("does not resolve")).length;
  try {
    await until(() => b.relay.peers.links().some((l) => l.connected), "b to reach a");
    // Three failed lookups: the entry's next retry is 4 s (±25%) away, well past the redirect.
    await until(() => lookups === 3 && unresolved() === 3, "b to look up localhost three times");
    resolves = true;
    void a.relay.drain(2000);
    const cLink = `127.0.0.1:${c.port}`;
    await until(
      () => b.relay.peers.links().some((l) => l.label === cLink),
      "b to place c's PEERS link on the redirect",
    );
    assert.equal(lookups, 4, "three failed lookups and the redirect's: not the entry's retry");
    await until(
      () => b.relay.peers.links().some((l) => l.label === cLink && l.connected),
      "c's link to connect",
    );
    // The entry's own retry then finds c's link in place and dials nothing more.
    await until(() => lookups === 5, "the entry's retry");
    await settled();
    assert.equal(
      dials.started.filter((host) => host === cLink).length,
      1,
      "b dialed c once, on the redirect",
    );
    assert.equal(peerSessions(c), 1, "c saw one peer session from b");
    assert.deepEqual(
      b.relay.peers.links().map((l) => l.label).sort(),
      [
        `127.0.0.1:${a.port}`,
        `127.0.0.1:${c.port}`,
      ].sort(),
    );
  } finally {
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
  // A dial deadline of 300 ms (shipped 10 s), so that several dials fail within the test.
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
  // A dial deadline of 300 ms (shipped 10 s): the deadline, not its length, is tested.
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
