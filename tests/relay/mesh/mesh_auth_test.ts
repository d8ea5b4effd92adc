// Peer credentials between relay processes: a relay signing with a key the
// other trusts peers (class "peer"); a forged, an expired and a non-peer
// credential are refused; with auth off peering works and both relays warn;
// PEERS with auth on and no RELAY_PEER_KEY stops the relay at start.
import assert from "node:assert/strict";
import { signToken } from "../../../src/auth/mod.ts";
import { MoqCode } from "../../../src/moq/mod.ts";
import { connect, VERSIONS } from "../../../src/moq/mod.ts";
import { connectQuicSession } from "../../../src/transport/mod.ts";
import { keySetText, makeKey } from "../../support/credentials.ts";
import { testCertificate, testCertificateFiles } from "../../support/certs.ts";
import { spawnServer } from "../../support/processes.ts";
import { until } from "../../support/wait.ts";
import { logged, type MeshRelay, startMeshRelay, stopMesh } from "./_mesh.ts";

/** Dials `port` as a would-be peer with `jwt`; resolves with the close code the relay gave. */
async function dialAsPeer(port: number, jwt: string): Promise<number> {
  const c = await testCertificate();
  const session = await connectQuicSession(
    new URL(`moqt://localhost:${port}/?peer=intruder&jwt=${jwt}`),
    { alpn: VERSIONS, serverCertificateHashes: [{ algorithm: "sha-256", value: c.sha256 }] },
  );
  const moq = await connect(session);
  moq.subscribe("any", "t");
  const info = await moq.closed;
  return info.code;
}

Deno.test("peer credentials: the right key peers; forged, expired and non-peer credentials are refused", async () => {
  const files = await testCertificateFiles();
  const trusted = await makeKey();
  const forged = await makeKey();
  const keys = `${files.dir}/keys.json`;
  await Deno.writeTextFile(keys, keySetText(trusted));
  await Deno.writeTextFile(`${files.dir}/trusted.jwk`, JSON.stringify(trusted.privateJwk));
  await Deno.writeTextFile(`${files.dir}/forged.jwk`, JSON.stringify(forged.privateJwk));
  const auth = { SLUICE_AUTH_KEYS: keys };
  const relays: MeshRelay[] = [];
  try {
    const a = await startMeshRelay("a", files, [], auth);
    relays.push(a);
    const b = await startMeshRelay("b", files, [a], {
      ...auth,
      RELAY_PEER_KEY: `${files.dir}/trusted.jwk`,
    });
    relays.push(b);
    const f = await startMeshRelay("f", files, [a], {
      ...auth,
      RELAY_PEER_KEY: `${files.dir}/forged.jwk`,
    });
    relays.push(f);
    await until(async () => (await b.metric("peers_connected")) === 1, "b to peer with a");
    assert.equal(await a.metric("sessions_total", { transport: "quic", class: "peer" }), 1);
    await logged(b, "(signed peer credentials)");

    // A key a does not trust: refused at every attempt, retried with backoff.
    const fPeer = { peer: a.address };
    await until(
      async () => (await f.metric("peer_dial_attempts_total", { ...fPeer, result: "error" })) >= 2,
      "f's dials to be refused",
    );
    assert.equal(await f.metric("peer_dial_attempts_total", { ...fPeer, result: "ok" }), 0);
    assert.ok((await f.metric("dial_retries_total", fPeer)) >= 1);
    assert.equal(await f.metric("peers_connected"), 0);
    await logged(a, /refused: .*(kid|key)/i);

    // Expired, and a valid credential without the peer action presented as a peer.
    const expired = await signToken(trusted.privateJwk, {
      sub: "old",
      scopes: [{ actions: ["peer"], broadcast: { prefix: "" } }],
    }, { ttlSeconds: 60, now: () => Date.now() - 3_600_000 });
    assert.equal(await dialAsPeer(a.port, expired), MoqCode.Unauthorized);
    const client = await signToken(trusted.privateJwk, {
      scopes: [{ actions: ["publish", "subscribe"], broadcast: { prefix: "" } }],
    });
    assert.equal(await dialAsPeer(a.port, client), MoqCode.Unauthorized);
    await logged(a, "says it is a peer but its credential has no peer scope");
    assert.equal(
      await a.metric("sessions_total", { transport: "quic", class: "peer" }),
      1,
      "only b",
    );
  } finally {
    await stopMesh(relays, files);
  }
});

Deno.test("with auth off peering works, counted as peer, and both sides warn", async () => {
  const files = await testCertificateFiles();
  const relays: MeshRelay[] = [];
  try {
    const a = await startMeshRelay("a", files);
    relays.push(a);
    const b = await startMeshRelay("b", files, [a]);
    relays.push(b);
    await until(async () => (await b.metric("peers_connected")) === 1, "b to peer with a");
    assert.equal(await a.metric("sessions_total", { transport: "quic", class: "peer" }), 1);
    await logged(a, "peers are unauthenticated");
    await logged(b, "RELAY_PEER_KEY is not set");
  } finally {
    await stopMesh(relays, files);
  }
});

Deno.test("PEERS with auth on and no RELAY_PEER_KEY stops the relay at start, naming the variables", async () => {
  const p = spawnServer("relay", {
    env: { PEERS: "127.0.0.1:4433", SLUICE_AUTH_KEYS: "/nonexistent/keys.json" },
  });
  const status = await p.finished();
  assert.equal(status.code, 2);
  const line = p.lines.find((l) => l.includes("RELAY_PEER_KEY"));
  assert.ok(line?.includes("PEERS") && line.includes("SLUICE_AUTH_KEYS"), p.lines.join("\n"));
});
