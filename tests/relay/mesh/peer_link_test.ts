// Dialing one peer address: backoff timings with an injected clock, the
// immediate redial after a session ends, renewal before the credential
// expires, and the counters each step moves.
import assert from "node:assert/strict";
import type { MoqSession } from "../../../src/moq/mod.ts";
import type { SessionCloseInfo } from "../../../src/transport/mod.ts";
import { DialBackoff } from "../../../src/relay/mesh/dial_backoff.ts";
import { PeerLink, type PeerSession } from "../../../src/relay/mesh/peer_link.ts";
import { createRelayMetrics } from "../../../src/relay/metrics/relay_metrics.ts";
import { SelfDialError } from "../../../src/relay/sessions/peer_session.ts";
import { ManualClock } from "../../support/manual_clock.ts";

/** A peer session the test ends by hand. */
function session(expiresAt?: number) {
  let end!: (info: SessionCloseInfo) => void;
  const ended = new Promise<SessionCloseInfo>((r) => (end = r));
  const closes: string[] = [];
  const moq = {
    close: (_code: number, reason: string) => {
      closes.push(reason);
      end({ code: 0, reason });
    },
  } as unknown as MoqSession;
  const s: PeerSession = { moq, ended, ...(expiresAt === undefined ? {} : { expiresAt }) };
  return { session: s, closes, drop: () => end({ code: 0, reason: "", dropped: true }) };
}

/** Lets the link's async steps run. */
const tick = () => new Promise((r) => setTimeout(r, 0));

function link(outcomes: (() => PeerSession)[], random = 0.5) {
  const clock = new ManualClock();
  const metrics = createRelayMetrics();
  const logs: string[] = [];
  let dials = 0;
  const l = new PeerLink({
    label: "192.0.2.7:4433",
    dial: () => {
      const next = outcomes[dials++];
      if (!next) return Promise.reject(new Error("unreachable"));
      try {
        return Promise.resolve(next());
      } catch (e) {
        return Promise.reject(e);
      }
    },
    metrics,
    timers: clock,
    now: clock.now,
    backoff: new DialBackoff({ random: () => random }),
    log: (line) => logs.push(line),
  });
  const peer = { peer: "192.0.2.7:4433" };
  const count = (result: string) => metrics.peerDialAttemptsTotal.value({ ...peer, result });
  return { l, clock, metrics, logs, count, retries: () => metrics.dialRetriesTotal.value(peer) };
}

const refuse = (): PeerSession => {
  throw new Error("refused");
};

Deno.test("failed dials back off 1, 2, 4 s (±25%) and a success resets the schedule", async () => {
  const up = session();
  const t = link([refuse, refuse, refuse, () => up.session, refuse]);
  t.l.start();
  await tick();
  const waits: number[] = [];
  for (let i = 0; i < 3; i++) {
    waits.push(t.clock.fireNext());
    await tick();
  }
  assert.deepEqual(waits, [1000, 2000, 4000]);
  assert.equal(t.l.connected, true);
  assert.equal(t.count("error"), 3);
  assert.equal(t.count("ok"), 1);
  assert.equal(t.retries(), 3);
  assert.deepEqual(t.clock.pending, [], "nothing is scheduled while connected");
  // The session ends: one immediate redial (0-100 ms); it fails, and the wait starts at 1 s again.
  up.drop();
  await tick();
  assert.equal(t.clock.fireNext(), 50);
  await tick();
  assert.deepEqual(t.clock.pending, [1000]);
  assert.equal(t.retries(), 4);
  t.l.stop();
  assert.deepEqual(t.clock.pending, []);
});

Deno.test("the wait is spread by ±25% and capped at 30 s", async () => {
  const low = link([], 0);
  low.l.start();
  await tick();
  const waits: number[] = [];
  for (let i = 0; i < 7; i++) {
    waits.push(low.clock.fireNext());
    await tick();
  }
  assert.deepEqual(waits, [750, 1500, 3000, 6000, 12000, 22500, 22500]);
  low.l.stop();
  const high = link([], 0.9999);
  high.l.start();
  await tick();
  assert.equal(high.clock.fireNext(), 1250);
  high.l.stop();
});

Deno.test("a session is renewed a minute before its credential expires, then the old one closes", async () => {
  const clock0 = 1_000_000;
  const first = session(clock0 + 3_600_000);
  const second = session(clock0 + 7_200_000);
  const t = link([() => first.session, () => second.session]);
  t.l.start();
  await tick();
  assert.deepEqual(t.clock.pending, [3_540_000]);
  t.clock.fireNext();
  await tick();
  assert.deepEqual(first.closes, ["session renewed"]);
  assert.equal(t.l.session, second.session);
  assert.equal(t.count("ok"), 2);
  assert.equal(t.retries(), 0, "a renewal is not a retry");
  await tick();
  assert.deepEqual(
    t.clock.pending,
    [3_600_000],
    "no redial for the renewed session; next renewal armed",
  );
  t.l.stop();
});

Deno.test("an address that turns out to be this relay is not dialed again", async () => {
  const t = link([() => {
    throw new SelfDialError("this is us");
  }]);
  t.l.start();
  await tick();
  assert.equal(t.l.stopped, true);
  assert.deepEqual(t.clock.pending, []);
  assert.ok(t.logs.some((l) => l.includes("is this relay")));
});

Deno.test("peer credentials carry the configured audience and issuer", async () => {
  const { createSigner } = await import("../../../src/auth/mod.ts");
  const { peerCredentials } = await import("../../../src/relay/mesh/peer_credential.ts");
  const { decodeJwt, exportJWK, generateKeyPair } = await import("jose");
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const signer = await createSigner(await exportJWK(privateKey));
  const mint = peerCredentials(signer, "relay-a", Date.now, {
    audience: "mesh.example",
    issuer: "relay-a",
  });
  const claims = decodeJwt((await mint()).token);
  assert.equal(claims.aud, "mesh.example");
  assert.equal(claims.iss, "relay-a");
  assert.equal(claims.sub, "relay-a");
});
