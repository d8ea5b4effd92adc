// The feed through a relay process: a subscriber the relay skips forward
// gets the skipped records from the ledger, and short-lived credentials
// are renewed without a gap or a reconnect.
import assert from "node:assert/strict";
import { type Dialer, openFeed, post } from "../../src/client/mod.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import type { Session } from "../../src/transport/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { stallable } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { assertSameGroups, ledgerEntries, Reader, Sender } from "./_feed.ts";
import { startServers } from "./_servers.ts";
import { sleep } from "../../src/timers/mod.ts";
import { FLOW_LAG_MS } from "../../src/relay/mod.ts";

Deno.test("a feed the relay skips forward (it stopped taking groups) gets the skipped records from the ledger", async () => {
  using _q = quiet();
  await using s = await startServers({ relay: true });
  const track = s.track("skip");
  await post(track, { n: 0 });
  const cert = await testCertificate();
  let gate: ReturnType<typeof stallable> | undefined;
  let groupStreams = 0;
  // Few concurrent incoming streams, and a gate that stops accepting them: the relay cannot keep up.
  const dial: Dialer = async (url, o) => {
    const session = await connectQuicSession(url, {
      alpn: o.protocols,
      serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
      maxConcurrentUnidirectionalStreams: 2,
    });
    gate = stallable(session);
    const inner = gate.session;
    const counted: Session = {
      ...inner,
      acceptUni: async () => {
        const stream = await inner.acceptUni();
        if (stream) groupStreams++;
        return stream;
      },
      openBidi: (x) => inner.openBidi(x),
      openUni: (x) => inner.openUni(x),
      acceptBidi: () => inner.acceptBidi(),
      translateError: (e) => inner.translateError(e),
      close: (c, r) => inner.close(c, r),
    };
    return counted;
  };
  const reader = new Reader(openFeed({ track, moq: s.moqt, from: "start", dial }));
  try {
    await reader.reaches("live");
    await reader.count(1);
    gate!.hold();
    const before = groupStreams;
    for (let n = 1; n <= 100; n += 10) {
      await Promise.all([...Array(10).keys()].map((k) => post(track, { n: n + k })));
    }
    // Record tracks are flow controlled: the relay skips a subscriber only once its next group
    // has waited past FLOW_LAG_MS. Stall that long, then post once more, so the relay's ring
    // drops the burst by age and the stalled cursor finds itself slower than the track.
    await sleep(FLOW_LAG_MS + 1_000);
    await post(track, { n: 101 });
    gate!.release();
    const ledger = await ledgerEntries(track);
    await reader.has(ledger.at(-1)!.group);
    assertSameGroups(reader.records, ledger.map((e) => e.group));
    const live = groupStreams - before;
    assert.ok(live < 101, `the relay skipped groups (${live} of 101 arrived live)`);
    console.log(`skipped subscriber: ${live} of 101 records live, the rest from the ledger`);
  } finally {
    gate?.release();
    await reader.close();
  }
});

Deno.test("short-lived credentials are renewed before they expire: no reconnect, no gap (through the relay, auth on)", async () => {
  using _q = quiet();
  await using s = await startServers({ relay: true, auth: true });
  const track = s.track("tokens");
  const postToken = await s.token(["post"]);
  const sender = new Sender(track, { token: () => Promise.resolve(postToken), gapMs: 20 });
  await sender.more(5);
  let calls = 0;
  const token = () => {
    calls++;
    return s.token(["fetch", "subscribe"], 4);
  };
  const reader = new Reader(
    openFeed({ track, moq: s.moqt, from: "start", token, serverCertificateHashes: s.hashes }),
  );
  try {
    const liveAt = await reader.reaches("live");
    await sleep(10_000); // two and a half lifetimes of a credential
    await sender.stop();
    const readToken = await s.token(["fetch"]);
    const ledger = await ledgerEntries(track, readToken);
    await reader.has(ledger.at(-1)!.group);
    assertSameGroups(reader.records, ledger.map((e) => e.group));
    assert.ok(calls >= 3, `the token function was asked again (${calls} calls)`);
    const after = reader.states.filter((x) => x.at > liveAt).map((x) => x.state);
    assert.ok(!after.includes("connecting"), `no reconnect: ${after.join(", ")}`);
  } finally {
    await sender.stop();
    await reader.close();
  }
});
