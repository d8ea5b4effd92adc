// Whose GOAWAY a relay follows: only a peer it dialed itself, and only to a
// host and port named in PEERS, since following a redirect dials it with a fresh peer
// credential. And a failed peer dial never logs that credential.
import assert from "node:assert/strict";
import { connect, VERSIONS } from "../../../src/moq/mod.ts";
import type { PeerEntry, RelayOptions } from "../../../src/relay/mod.ts";
import { connectQuicSession, freeUdpTcpPort } from "../../../src/transport/mod.ts";
import { testCertificate } from "../../support/certs.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay, type TestRelay } from "../../support/test_relay.ts";
import { settled, until } from "../../support/wait.ts";
import { peerDials } from "./_peer_dials.ts";

/** Sessions a relay admitted as peers so far. */
const peerSessions = (t: TestRelay) =>
  t.relay.metrics.sessionsTotal.value({ transport: "quic", class: "peer" });

/** A relay that dials `peers` (auth off, the compose default). */
function dialer(peers: PeerEntry[], extra: Partial<RelayOptions> = {}): Promise<TestRelay> {
  return startTestRelay({ extra: { name: "b", peers, ...extra } });
}

Deno.test("a GOAWAY from a session that dialed in calling itself a peer is not followed", async () => {
  using _q = quiet();
  const a = await startTestRelay();
  const trap = await startTestRelay();
  // b peers with a on 127.0.0.1, so the trap's host is a PEERS host: only the direction counts.
  const dials = await peerDials();
  const b = await dialer([{ host: "127.0.0.1", port: a.port }], { peerTransport: dials.transport });
  const c = await testCertificate();
  try {
    await until(() => b.relay.peers.links().some((l) => l.connected), "b to reach a");
    // With auth off, `?peer=` in the URL is all it takes to be admitted as a peer.
    const session = await connectQuicSession(
      new URL(`moqt://localhost:${b.port}/?peer=intruder`),
      { alpn: VERSIONS, serverCertificateHashes: [{ algorithm: "sha-256", value: c.sha256 }] },
    );
    const intruder = await connect(session);
    await until(
      () => b.relay.metrics.sessionsTotal.value({ transport: "quic", class: "peer" }) === 1,
      "b to admit the intruder as a peer",
    );
    await intruder.sendGoaway(`moqt://127.0.0.1:${trap.port}/`);
    await until(() => b.logs.some((l) => l.includes("ignoring GOAWAY redirect")), "b to decide");
    await settled();
    assert.deepEqual(dials.started, [`127.0.0.1:${a.port}`], "b never dialed the redirect");
    assert.equal(peerSessions(trap), 0, "b never dialed the intruder's redirect");
    assert.equal(b.relay.peers.links().length, 1, "the PEERS link and no other");
    intruder.close(0, "done");
  } finally {
    await b.stop();
    await a.stop();
    await trap.stop();
  }
});

Deno.test("a GOAWAY from a dialed peer naming a host outside PEERS is not followed", async () => {
  using _q = quiet();
  // The redirect's relay listens on 127.0.0.2, a host PEERS does not name.
  const elsewhere = await startTestRelay({ extra: { hostname: "127.0.0.2" } });
  const a = await startTestRelay({
    extra: { goawayUri: `moqt://127.0.0.2:${elsewhere.port}/` },
  });
  const dials = await peerDials();
  const b = await dialer([{ host: "127.0.0.1", port: a.port }], { peerTransport: dials.transport });
  try {
    await until(() => b.relay.peers.links().some((l) => l.connected), "b to reach a");
    void a.relay.drain(500);
    await until(() => b.logs.some((l) => l.includes("sent GOAWAY naming")), "b to hear GOAWAY");
    await until(
      () => b.logs.some((l) => l.includes("is not a host named in PEERS")),
      "b to refuse the redirect",
    );
    await settled();
    assert.ok(
      dials.started.every((host) => host === `127.0.0.1:${a.port}`),
      `b dialed only a: ${dials.started.join(", ")}`,
    );
    assert.equal(peerSessions(elsewhere), 0, "b never dialed a host outside PEERS");
    assert.equal(b.relay.peers.links().length, 1, "the PEERS link and no other");
  } finally {
    await b.stop();
    await a.stop();
    await elsewhere.stop();
  }
});

Deno.test("a GOAWAY from a dialed peer naming a PEERS host on a port PEERS does not name is not followed", async () => {
  using _q = quiet();
  // The trap listens on 127.0.0.1, the host PEERS names for a, but on a port of its own.
  const trap = await startTestRelay();
  const a = await startTestRelay({ extra: { goawayUri: `moqt://127.0.0.1:${trap.port}/` } });
  const dials = await peerDials();
  const b = await dialer([{ host: "127.0.0.1", port: a.port }], { peerTransport: dials.transport });
  try {
    await until(() => b.relay.peers.links().some((l) => l.connected), "b to reach a");
    void a.relay.drain(500);
    await until(() => b.logs.some((l) => l.includes("sent GOAWAY naming")), "b to hear GOAWAY");
    await until(
      () => b.logs.some((l) => l.includes(`port ${trap.port} is not one PEERS names`)),
      "b to refuse the redirect",
    );
    await settled();
    assert.ok(
      dials.started.every((host) => host === `127.0.0.1:${a.port}`),
      `b dialed only a: ${dials.started.join(", ")}`,
    );
    assert.equal(peerSessions(trap), 0, "b never dialed another port with a peer credential");
    assert.equal(b.relay.peers.links().length, 1, "the PEERS link and no other");
  } finally {
    await b.stop();
    await a.stop();
    await trap.stop();
  }
});

Deno.test("a failed peer dial logs its URL without the peer credential", async () => {
  using _q = quiet();
  const secret = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJiIn0.c2VjcmV0LXNpZ25hdHVyZQ";
  // Nothing listens on this port: every wss:// dial fails and is logged.
  const port = freeUdpTcpPort();
  const b = await dialer([{ host: "127.0.0.1", port, scheme: "wss" }], {
    peerCredential: () => Promise.resolve({ token: secret, expiresAt: Date.now() + 600_000 }),
  });
  try {
    await until(() => b.logs.some((l) => l.includes("dial failed")), "a dial to fail");
    const failed = b.logs.filter((l) => l.includes("dial failed"));
    assert.ok(failed.some((l) => l.includes("jwt=REDACTED")), failed.join("\n"));
    for (const l of b.logs) assert.ok(!l.includes(secret), `a log line holds the token: ${l}`);
    for (const l of b.logs) assert.ok(!l.includes("c2VjcmV0"), `a log line holds the token: ${l}`);
  } finally {
    await b.stop();
  }
});

Deno.test("a GOAWAY naming a host that resolves to a PEERS address and another dials only the PEERS one", async () => {
  using _q = quiet();
  // The name resolves to the trap (127.0.0.2, outside PEERS) first and to a's host second:
  // one matching address must not take the credential to the other.
  const trap = await startTestRelay({ extra: { hostname: "127.0.0.2" } });
  const a = await startTestRelay({ extra: { goawayUri: `moqt://mixed.test:${trap.port}/` } });
  const dials = await peerDials();
  const b = await dialer([{ host: "127.0.0.1", port: a.port }], {
    resolve: (host) => Promise.resolve(host === "mixed.test" ? ["127.0.0.2", "127.0.0.1"] : [host]),
    peerTransport: dials.transport,
  });
  try {
    await until(() => b.relay.peers.links().some((l) => l.connected), "b to reach a");
    void a.relay.drain(500);
    await until(() => b.logs.some((l) => l.includes("sent GOAWAY naming")), "b to hear GOAWAY");
    await until(
      () => b.logs.some((l) => l.includes("GOAWAY redirect") && l.includes("not followed")),
      "b to decide on the redirect",
    );
    await settled();
    // The test certificate does not name mixed.test, so a dial fails its handshake; a real
    // attacker holds a certificate for its own name. What counts is that b never dials it.
    assert.ok(
      dials.started.every((host) => host === `127.0.0.1:${a.port}`),
      `b dialed only a: ${dials.started.join(", ")}`,
    );
    assert.equal(peerSessions(trap), 0);
    const dialedTrap = b.logs.filter((l) => l.includes(`127.0.0.2:${trap.port}`));
    assert.deepEqual(dialedTrap, [], "b never dials 127.0.0.2 with a peer credential");
  } finally {
    await b.stop();
    await a.stop();
    await trap.stop();
  }
});
