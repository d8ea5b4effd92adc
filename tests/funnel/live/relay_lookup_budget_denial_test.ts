// The relay session's storage lookup budget (RELAY_LOOKUP_LIMIT: 4,096, then 256 a second) is
// one for every client of the relay: the relay subscribes upstream for all of them over its one
// session, and a relay client naming fresh tracks under the funnel's broadcast costs a lookup
// each, with no budget of its own at the relay. So one client spends it, and then another
// client's subscription to a track that exists, holding an acknowledged record, but that the
// funnel does not hold open (as after a funnel restart) is refused; the funnel says "too many",
// the relay (which reads the refusal of its moq-lite upstream over native QUIC as a bare FIN)
// tells its subscriber "not found". The clock the lookups are budgeted by stands still, as in
// live_lookup_budget_test.ts; an attacker sustaining more than 256 fresh names a second keeps it
// spent with a real one.
import assert from "node:assert/strict";
import { type LedgerBackend, MemoryBackend } from "../../../src/ledger/mod.ts";
import { MoqError, type Subscription } from "../../../src/moq/mod.ts";
import { RELAY_LOOKUP_LIMIT } from "../../../src/funnel/live/track_lookups.ts";
import { testCertificateFiles } from "../../support/certs.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { quiet } from "../../support/quiet.ts";
import { until, within } from "../../support/wait.ts";
import { post, startLiveFunnel, take } from "../../support/live_funnel.ts";

// A memory backend that outlives a funnel (its close is the test's), so a second funnel starts
// on the first one's ledger with every track closed.
function lastingBackend(): LedgerBackend {
  const inner = new MemoryBackend();
  return {
    name: inner.name,
    listTracks: () => inner.listTracks(),
    close: () => Promise.resolve(),
    openTrack: (path, create) => inner.openTrack(path, create),
  };
}

const BATCH = 100;
const ready = (sub: Subscription): Promise<unknown> => within(sub.ready, 10_000, "an answer");

Deno.test({
  name:
    "through a relay, a client naming fresh tracks does not deny another client an existing track the funnel has closed",
  // A known hole (see the header). A fix needs the relay to budget, per downstream session, the
  // upstream subscriptions to tracks it does not serve yet (so no one client spends the relay
  // session's budget), and to pass the upstream's "too many" on as such rather than as "not
  // found" (over native QUIC the moq-lite refusal is a bare FIN, so the relay cannot tell).
  ignore: true,
  fn: async () => {
    using _q = quiet();
    const backend = lastingBackend();
    const now = Date.now();
    const relay = await startTestRelay();
    const files = await testCertificateFiles();
    const env = {
      FUNNEL_SERVE_ADDR: "none",
      RELAY_URL: `moqt://localhost:${relay.port}/`,
      RELAY_CA_FILE: files.cert,
    };
    // An acknowledged record, then a funnel restart: its track exists, closed.
    const first = await startLiveFunnel(env, { backend, now: () => now });
    assert.equal((await post(first.base, "fresh/real", "1")).status, 201);
    await first[Symbol.asyncDispose]();
    const f = await startLiveFunnel(env, { backend, now: () => now });
    const attacker = await dialOurs(relay.port);
    const honest = await dialOurs(relay.port, { webSocket: ["qmux-02"] });
    try {
      await until(() => f.funnel.live.relay?.state === "connected", "the funnel's relay session");
      await within(seeAnnounced(attacker, "fresh"), 10_000, "the broadcast at the relay");
      await within(seeAnnounced(honest, "fresh"), 10_000, "the broadcast at the relay");
      // One client of the relay names the relay session's burst of fresh tracks.
      const names = RELAY_LOOKUP_LIMIT.burst;
      for (let i = 0; i < names; i += BATCH) {
        await Promise.all(
          Array.from(
            { length: Math.min(BATCH, names - i) },
            (_, j) => ready(attacker.subscribe("fresh", `t${i + j}`)).catch(() => {}),
          ),
        );
      }
      // Another client subscribes to the track holding the acknowledged record.
      const told = await take(honest.subscribe("fresh", "real"), 1).then(
        (got) => got,
        (e) => e instanceof MoqError ? `${e.code}: ${e.message}` : String(e),
      );
      const metrics = await (await fetch(`${f.base}/metrics`)).text();
      const limited = metrics.split("\n").find((l) =>
        l.startsWith('sluice_funnel_track_lookups_limited_total{limit="relay"}')
      );
      assert.deepEqual(
        told,
        [{ seq: 1, frame: '{"payload":1}' }],
        `the existing track was refused (funnel: ${limited})`,
      );
    } finally {
      attacker.close(0, "");
      honest.close(0, "");
      await f[Symbol.asyncDispose]();
      await relay.stop();
    }
  },
});

Deno.test({
  name:
    "on the funnel's own listener, sessions naming fresh tracks do not deny another session an existing track the funnel has closed",
  // The same hole on the funnel's own listener: every listener session shares one budget
  // (LISTENER_LOOKUP_LIMIT, 1,024 then 128 a second), spent here by 16 sessions of 64 fresh
  // names each (their own burst), anyone's when auth is off. The refusal is "too many" (11), not
  // "not found", over WebSocket; over native QUIC it is a bare FIN, read as not found.
  ignore: true,
  fn: async () => {
    using _q = quiet();
    const backend = lastingBackend();
    const now = Date.now();
    const first = await startLiveFunnel({}, { backend, now: () => now });
    assert.equal((await post(first.base, "fresh/real", "1")).status, 201);
    await first[Symbol.asyncDispose]();
    const f = await startLiveFunnel({}, { backend, now: () => now });
    const sessions = [];
    try {
      for (let s = 0; s < 16; s++) {
        const attacker = await dialOurs(f.moqPort);
        sessions.push(attacker);
        await Promise.all(
          Array.from(
            { length: 64 },
            (_, j) => ready(attacker.subscribe("fresh", `s${s}t${j}`)).catch(() => {}),
          ),
        );
      }
      const honest = await dialOurs(f.moqPort, { webSocket: ["qmux-02"] });
      sessions.push(honest);
      const told = await take(honest.subscribe("fresh", "real"), 1).then(
        (got) => got,
        (e) => e instanceof MoqError ? `${e.code}: ${e.message}` : String(e),
      );
      assert.deepEqual(told, [{ seq: 1, frame: '{"payload":1}' }]);
    } finally {
      for (const s of sessions) s.close(0, "");
      await f[Symbol.asyncDispose]();
    }
  },
});
