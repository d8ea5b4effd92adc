// The own listener's worker as a reader of the commit feed: it holds the feed back, not its inbox.
import assert from "node:assert/strict";
import { CommitFeed, type LedgerEntry, parseTrackPath } from "../../../../src/ledger/mod.ts";
import {
  LISTENER_BACKLOG,
  startWorkerListener,
} from "../../../../src/funnel/live/listener/worker_listener_host.ts";
import { SAME_ORIGIN_ONLY } from "../../../../src/http/mod.ts";
import { testCertificate } from "../../../support/certs.ts";
import { until, within } from "../../../support/wait.ts";

const SILENT = { debug() {}, info() {}, warn() {}, error() {} };

/** The funnel's own listener, in its worker, on a free port of loopback. */
async function listen() {
  const certificate = await testCertificate();
  return await startWorkerListener({
    hostname: "127.0.0.1",
    port: 0,
    certPem: certificate.certPem,
    keyPem: certificate.keyPem,
    verifier: undefined,
    cors: SAME_ORIGIN_ONLY,
    log: SILENT,
  });
}

Deno.test("the listener's worker holds its reader back past LISTENER_BACKLOG unapplied entries, until it applied them", async () => {
  const listener = await listen();
  try {
    const path = parseTrackPath("room/1/chat");
    const entry = (seq: number): LedgerEntry => ({
      epoch: 1,
      seq,
      wallclock: BigInt(Date.now()) * 1_000_000n,
      payload: `{"n":${seq}}`,
    });
    listener.trackCreated(path, undefined);
    // Told without a turn in between, as a burst: the worker has applied nothing yet.
    let held: void | Promise<void> = undefined;
    let seq = 0;
    while (held === undefined && seq < 2 * LISTENER_BACKLOG) {
      held = listener.committed(path, [entry(seq++)]);
    }
    assert.ok(held instanceof Promise, "held back");
    // The track's creation counts as one: the reader is held at the bound, not before.
    assert.equal(seq, LISTENER_BACKLOG);
    await within(held, 10_000, "the worker applied the backlog");
    assert.equal(listener.committed(path, [entry(seq++)]), undefined, "caught up: not held");
  } finally {
    await listener.stop();
  }
});

Deno.test("track creations in a burst (a flood of PUTs, another funnel's new tracks) are held back at LISTENER_BACKLOG too, and each reaches the worker", async () => {
  const listener = await listen();
  // Creations only: nothing for the feed to read back but the creations themselves.
  const feed = new CommitFeed(() => Promise.resolve([]));
  // The most entries that waited for the worker after any call of the feed.
  let most = 0;
  const subscription = feed.subscribe({
    trackCreated: (path, newest) => {
      const held = listener.trackCreated(path, newest);
      most = Math.max(most, listener.backlog);
      return held;
    },
  });
  try {
    const tracks = 3 * LISTENER_BACKLOG;
    for (let i = 0; i < tracks; i++) feed.trackCreated(parseTrackPath(`room/t${i}`), undefined);
    // Nothing was dropped: the feed tells the rest as the worker applies, the last one included.
    await until(
      async () => await listener.subscribers("room", `t${tracks - 1}`) === 0,
      "the worker to create the last track",
    );
    assert.equal(await listener.subscribers("room", `t${tracks - 2}`), 0);
    assert.equal(listener.backlog, 0);
    assert.ok(most <= LISTENER_BACKLOG + 1, `${most} creations waited for the worker at once`);
  } finally {
    subscription.close();
    await listener.stop();
  }
});
