// A feed across a server that is killed without closing (SIGKILL) and
// started again, with records posted all the while: every record arrives
// once, in commit order, and the feed notices the loss within seconds.
import assert from "node:assert/strict";
import { openFeed } from "../../src/client/mod.ts";
import { quiet } from "../support/quiet.ts";
import { assertSameGroups, ledgerEntries, Reader, Sender } from "./_feed.ts";
import { startServers } from "./_servers.ts";
import { sleep } from "../../src/timers/mod.ts";

Deno.test("the funnel killed and restarted mid-stream (feed on its own listener, native QUIC): every record once, in order", async () => {
  using _q = quiet();
  await using s = await startServers();
  const track = s.track("chat");
  const sender = new Sender(track);
  await sender.more(30);
  const reader = new Reader(
    openFeed({ track, moq: s.moqt, from: "start", serverCertificateHashes: s.hashes }),
  );
  try {
    await reader.reaches("live");
    await sender.more(30);
    const killedAt = Date.now();
    await s.funnel.kill("SIGKILL");
    const noticedAt = await reader.reaches("connecting", killedAt);
    const restartAt = Date.now();
    await s.funnel.start();
    const liveAt = await reader.reaches("live", restartAt);
    await sender.more(30);
    await sender.stop();
    const ledger = await ledgerEntries(track);
    await reader.has(ledger.at(-1)!.group);
    assertSameGroups(reader.records, ledger.map((e) => e.group));
    const posted = new Set(ledger.map((e) => (e.payload as { n: number }).n));
    assert.deepEqual(
      sender.committed.filter((c) => !posted.has(c.n)),
      [],
      "every commit is in the ledger",
    );
    console.log(
      `funnel SIGKILL: loss noticed after ${noticedAt - killedAt} ms; live again ${
        liveAt - restartAt
      } ms after the restart began; ${ledger.length} records`,
    );
    assert.ok(noticedAt - killedAt < 10_000, "the loss is noticed within seconds");
  } finally {
    await sender.stop();
    await reader.close();
  }
});

Deno.test("the relay killed and restarted mid-stream (feed through the relay over WebTransport): every record once, in order", async () => {
  using _q = quiet();
  await using s = await startServers({ relay: true });
  const track = s.track("chat");
  const sender = new Sender(track);
  await sender.more(30);
  const reader = new Reader(
    openFeed({ track, moq: s.https, from: "start", serverCertificateHashes: s.hashes }),
  );
  try {
    await reader.reaches("live");
    await sender.more(30);
    const killedAt = Date.now();
    await s.relay!.kill("SIGKILL");
    const noticedAt = await reader.reaches("connecting", killedAt);
    // The funnel is still up: its records keep coming from the ledger meanwhile.
    const during = reader.records.length;
    await sender.more(20);
    await reader.count(during + 20);
    await sleep(200);
    const restartAt = Date.now();
    await s.relay!.start();
    const liveAt = await reader.reaches("live", restartAt);
    await sender.more(30);
    await sender.stop();
    const ledger = await ledgerEntries(track);
    await reader.has(ledger.at(-1)!.group);
    assertSameGroups(reader.records, ledger.map((e) => e.group));
    assert.equal(ledger.length, sender.committed.length, "the funnel never went away");
    console.log(
      `relay SIGKILL: loss noticed after ${noticedAt - killedAt} ms; live again ${
        liveAt - restartAt
      } ms after the restart began; ${ledger.length} records`,
    );
    assert.ok(noticedAt - killedAt < 10_000, "the loss is noticed within seconds");
  } finally {
    await sender.stop();
    await reader.close();
  }
});
