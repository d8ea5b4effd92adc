// A FETCH of a record retention removed is refused as gone (moq-lite code 2, the Rust
// reference's `Old`), not as unknown: from the funnel's own listener (its worker asks
// the main thread's ledger) and through a relay forwarding the FETCH upstream. The code
// travels where streams carry reset codes (QMux over WebSocket); Deno's QUIC resets
// with a bare FIN, which reads as not found, so a client falls back to the ledger's 410.
import assert from "node:assert/strict";
import { Retention } from "../../src/ledger/mod.ts";
import { MoqError, type MoqSession } from "../../src/moq/mod.ts";
import { testCertificateFiles } from "../support/certs.ts";
import { dialOurs, seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { until } from "../support/wait.ts";
import { type LiveFunnel, post, startLiveFunnel } from "../support/live_funnel.ts";

const decoder = new TextDecoder();

async function postAndTrim(f: LiveFunnel): Promise<void> {
  // More than the worker's 64 and the relay session's 32 recent groups: the oldest are
  // served from the ledger alone. (Groups still held in those caches are served from them.)
  for (let n = 0; n < 100; n++) {
    assert.equal((await post(f.base, "room/1/chat", JSON.stringify({ n }))).status, 201);
  }
  const retention = new Retention(f.funnel.ledger, {
    config: { default: { maxCount: 5 }, rules: [] },
  });
  assert.equal((await retention.pass())?.removed, 95);
}

async function assertGone(moq: MoqSession, sequence: number): Promise<void> {
  await assert.rejects(
    moq.fetch("room/1", "chat", sequence),
    (e) => e instanceof MoqError && e.code === "gone",
    `group ${sequence} is gone`,
  );
}

Deno.test("Own listener: FETCH of a removed record is refused as gone, a kept one is served", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  await postAndTrim(f);
  const ws = await dialOurs(f.moqPort, { webSocket: ["qmux-02"] });
  const quic = await dialOurs(f.moqPort);
  try {
    await assertGone(ws, 3); // record 2
    await assertGone(ws, 30); // record 29
    assert.equal(
      decoder.decode((await ws.fetch("room/1", "chat", 97)).frames[0]),
      `{"payload":{"n":96}}`,
    );
    // No reset code over Deno's QUIC: a removed group reads as not found there.
    await assert.rejects(
      quic.fetch("room/1", "chat", 3),
      (e) => e instanceof MoqError && e.code === "not_found",
    );
  } finally {
    ws.close(0, "");
    quic.close(0, "");
  }
});

Deno.test("Through a relay: a forwarded FETCH of a removed record is refused as gone", async () => {
  using _q = quiet();
  const relay = await startTestRelay();
  const files = await testCertificateFiles();
  // Over WebSocket, so the funnel's refusal reaches the relay with its code.
  await using f = await startLiveFunnel({
    FUNNEL_SERVE_ADDR: "none",
    RELAY_URL: `wss://localhost:${relay.port}/`,
    RELAY_CA_FILE: files.cert,
  });
  let subscriber: MoqSession | undefined;
  try {
    await until(() => f.funnel.live.relay?.state === "connected", "the funnel's relay session");
    await postAndTrim(f);
    subscriber = await dialOurs(relay.port, { webSocket: ["qmux-02"] });
    await seeAnnounced(subscriber, "room/1");
    await assertGone(subscriber, 3);
    assert.equal(
      decoder.decode((await subscriber.fetch("room/1", "chat", 97)).frames[0]),
      `{"payload":{"n":96}}`,
    );
  } finally {
    subscriber?.close(0, "");
    await relay.stop();
    await Deno.remove(files.dir, { recursive: true });
  }
});

Deno.test("Own listener: a kept record sharing a ledger page with removed ones is served by FETCH", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  // 200 records, the newest 100 kept: records 100..135 are beyond the worker's 64 recent
  // groups, so only the ledger serves them, from the page of records 64..127 that
  // retention cut into.
  for (let n = 0; n < 200; n++) {
    assert.equal((await post(f.base, "room/1/chat", JSON.stringify({ n }))).status, 201);
  }
  const retention = new Retention(f.funnel.ledger, {
    config: { default: { maxCount: 100 }, rules: [] },
  });
  assert.equal((await retention.pass())?.removed, 100);
  const ws = await dialOurs(f.moqPort, { webSocket: ["qmux-02"] });
  try {
    await assertGone(ws, 100); // record 99
    for (const record of [100, 110, 127, 128, 135]) {
      assert.equal(
        decoder.decode((await ws.fetch("room/1", "chat", record + 1)).frames[0]),
        `{"payload":{"n":${record}}}`,
        `record ${record} is kept`,
      );
    }
  } finally {
    ws.close(0, "");
  }
});
