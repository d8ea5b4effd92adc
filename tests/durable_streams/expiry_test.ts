// Stream-TTL and Stream-Expires-At reach the ledger: an expired stream answers 404 to readers and
// writers, on the funnel that served it and after a restart alike (the sliding TTL counts from
// the newest entry's commit, reads recorded at most once per half TTL), and the retention pass
// removes its records, unless a fork still reads them in place. Memory, directory, S3 and
// PostgreSQL ledgers, one injected clock for the ledger, the streams and the pass.
import assert from "node:assert/strict";
import { Ledger, type LedgerBackend, Retention } from "../../src/ledger/mod.ts";
import { pinsStream, StreamExpiry, StreamService } from "../../src/durable_streams/mod.ts";
import { ManualClock } from "../support/manual_clock.ts";
import { ignoreWithout } from "../support/requires.ts";
import { until } from "../support/wait.ts";
import { type BackendInstance, HARNESSES } from "../ledger/_backends.ts";

const TESTED = ["memory", "directory", "postgres", "s3"];

/** One funnel's view: a ledger over the storage, its streams, and its retention pass. */
class Funnel {
  readonly ledger: Ledger;
  readonly streams: StreamService;
  readonly retention: Retention;
  readonly expiry: StreamExpiry;

  constructor(backend: LedgerBackend, clock: ManualClock) {
    this.ledger = new Ledger(backend, { clock: clock.nowNs, deadlineMs: 0 });
    this.streams = new StreamService({ ledger: this.ledger, verifier: undefined, now: clock.now });
    // Every policy keeps everything: only expiry removes records.
    this.retention = new Retention(this.ledger, {
      config: { default: {}, rules: [] },
      clock: clock.nowNs,
      pins: (entry) => pinsStream(entry.meta),
      expire: this.expiry = new StreamExpiry(clock.now),
    });
  }

  async call(
    method: string,
    name: string,
    headers: Record<string, string> = {},
    body?: string,
  ): Promise<[number, string]> {
    const response = await this.streams.handle(
      new Request(`http://funnel/v1/stream/${name}`, {
        method,
        headers: { "content-type": "text/plain", ...headers },
        ...(body !== undefined ? { body } : {}),
      }),
    );
    return [response.status, await response.text()];
  }

  /** Runs a pass; resolves with the records it removed. */
  async pass(): Promise<number> {
    const report = await this.retention.pass();
    assert.ok(report);
    assert.equal(report.failed, 0);
    return report.removed;
  }

  /** The first stored sequence of a one-segment stream's track. */
  async first(name: string): Promise<number> {
    const track = await this.ledger.track({ broadcast: [name], track: "stream" }, false);
    return await track!.first();
  }

  close(): Promise<void> {
    return this.ledger.close();
  }
}

function perBackend(
  name: string,
  body: (instance: BackendInstance, clock: ManualClock, harness: string) => Promise<void>,
): void {
  for (const harness of HARNESSES.filter((h) => TESTED.includes(h.name))) {
    const needs = harness.needs;
    Deno.test({
      name: `stream expiry ${harness.name}: ${name}`,
      ignore: needs ? ignoreWithout(needs.service, needs.missing) : false,
      async fn() {
        const instance = await harness.setup();
        try {
          await body(instance, new ManualClock(1_800_000_000_000), harness.name);
        } finally {
          await instance.cleanup();
        }
      },
    });
  }
}

perBackend(
  "a TTL counts from the ledger's newest access, across a restart",
  async (instance, clock) => {
    let funnel = new Funnel(await instance.open(), clock);
    try {
      assert.equal((await funnel.call("PUT", "idle", { "stream-ttl": "10" }, "a"))[0], 201);
      assert.equal((await funnel.call("PUT", "read", { "stream-ttl": "10" }, "b"))[0], 201);
      clock.advance(6_000);
      // Past half the TTL since the creation: this read is recorded in the ledger.
      assert.deepEqual(await funnel.call("GET", "read"), [200, "b"]);
      await funnel.close();
      clock.advance(5_000);
      funnel = new Funnel(await instance.open(), clock);
      // 11 s after its last access: gone after the restart too (it used to count anew).
      assert.equal((await funnel.call("GET", "idle"))[0], 404);
      assert.equal((await funnel.call("POST", "idle", {}, "more"))[0], 404);
      // Read 5 s ago, and the restart knows it.
      assert.deepEqual(await funnel.call("GET", "read"), [200, "b"]);
    } finally {
      await funnel.close();
    }
  },
);

perBackend(
  "an expired stream's records go by a pass; a new stream under the name starts after",
  async (instance, clock, harness) => {
    const funnel = new Funnel(await instance.open(), clock);
    try {
      const at = new Date(clock.now() + 60_000).toISOString();
      assert.equal((await funnel.call("PUT", "s", { "stream-expires-at": at }, "x"))[0], 201);
      for (let i = 0; i < 40; i++) {
        assert.equal(
          (await funnel.call("POST", "s", {}, `record-${i}-${"p".repeat(100)}`))[0],
          204,
        );
      }
      assert.equal(await funnel.pass(), 0, "not expired: nothing goes");
      clock.advance(61_000);
      assert.equal((await funnel.call("GET", "s"))[0], 404);
      assert.equal((await funnel.call("POST", "s", {}, "late"))[0], 404);
      // Expired, but not before the last complete pass began: kept one pass more, so that
      // pass has seen every fork made of it.
      assert.equal(await funnel.pass(), 0);
      clock.advance(1_000);
      const removed = await funnel.pass();
      const first = await funnel.first("s");
      if (harness === "directory") {
        // Whole segment files go, never the tail one.
        assert.ok(removed > 0 && first > 0, `removed ${removed}, first ${first}`);
      } else {
        assert.equal(removed, 41, "the creation and every append");
        assert.equal(first, 41, "the ending entry stays: it carries the numbering");
      }
      assert.equal(await funnel.pass(), 0, "nothing more");
      assert.equal((await funnel.call("GET", "s"))[0], 404);
      assert.equal((await funnel.call("PUT", "s", {}, "new"))[0], 201);
      assert.deepEqual(await funnel.call("GET", "s"), [200, "new"]);
      assert.equal(await funnel.pass(), 0, "a stream without expiry stays");
    } finally {
      await funnel.close();
    }
  },
);

perBackend(
  "a fork keeps reading what it inherited while it lives; then the source goes",
  async (instance, clock, harness) => {
    const funnel = new Funnel(await instance.open(), clock);
    try {
      assert.equal((await funnel.call("PUT", "src", { "stream-ttl": "10" }, "inherited"))[0], 201);
      const fork = { "stream-forked-from": "/v1/stream/src", "stream-ttl": "3600" };
      assert.equal((await funnel.call("PUT", "fork", fork))[0], 201);
      assert.equal((await funnel.call("POST", "fork", {}, "+own"))[0], 204);
      clock.advance(16_000);
      assert.equal(await funnel.pass(), 0);
      clock.advance(1_000);
      assert.equal(await funnel.pass(), 0, "the fork links to it: its records stay");
      assert.equal((await funnel.call("GET", "src"))[0], 404);
      assert.equal(await funnel.first("src"), 0);
      assert.deepEqual(await funnel.call("GET", "fork"), [200, "inherited+own"]);
      // The fork deleted: the next complete pass no longer sees its link, the one after
      // removes the source.
      assert.equal((await funnel.call("DELETE", "fork"))[0], 204);
      assert.equal(await funnel.pass(), 0);
      const removed = await funnel.pass();
      if (harness !== "directory") assert.equal(removed, 1);
      assert.equal((await funnel.call("GET", "src"))[0], 404);
    } finally {
      await funnel.close();
    }
  },
);

perBackend(
  "a stream read within its TTL is not removed, however old its last write",
  async (instance, clock) => {
    const funnel = new Funnel(await instance.open(), clock);
    try {
      assert.equal((await funnel.call("PUT", "kept", { "stream-ttl": "10" }, "k"))[0], 201);
      for (let i = 0; i < 8; i++) {
        clock.advance(8_000);
        assert.deepEqual(await funnel.call("GET", "kept"), [200, "k"]);
        assert.equal(await funnel.pass(), 0);
      }
      assert.equal(await funnel.first("kept"), 0);
    } finally {
      await funnel.close();
    }
  },
);

perBackend(
  "a deleted fork still read by its own fork keeps the stream both inherit from, across a restart",
  async (instance, clock) => {
    let funnel = new Funnel(await instance.open(), clock);
    try {
      assert.equal((await funnel.call("PUT", "root", { "stream-ttl": "10" }, "r"))[0], 201);
      const from = (name: string) => ({
        "stream-forked-from": `/v1/stream/${name}`,
        "stream-ttl": "3600",
      });
      assert.equal((await funnel.call("PUT", "mid", from("root"), ""))[0], 201);
      assert.equal((await funnel.call("POST", "mid", {}, "m"))[0], 204);
      assert.equal((await funnel.call("PUT", "leaf", from("mid"), ""))[0], 201);
      assert.equal((await funnel.call("POST", "leaf", {}, "l"))[0], 204);
      assert.equal((await funnel.call("DELETE", "mid"))[0], 204);
      clock.advance(16_000);
      assert.equal(await funnel.pass(), 0);
      // A restart forgets what the passes learnt: the first pass after it removes nothing.
      await funnel.close();
      funnel = new Funnel(await instance.open(), clock);
      assert.equal(await funnel.pass(), 0);
      clock.advance(1_000);
      assert.equal(await funnel.pass(), 0, "leaf reads root through the deleted mid");
      assert.deepEqual(await funnel.call("GET", "leaf"), [200, "rml"]);
      assert.equal((await funnel.call("GET", "root"))[0], 404, "expired all the same");
      assert.equal(await funnel.first("root"), 0);
    } finally {
      await funnel.close();
    }
  },
);

perBackend(
  "two funnels on one ledger count a TTL from the same recorded read",
  async (instance, clock, harness) => {
    // Only PostgreSQL is shared by funnels running at once.
    if (harness !== "postgres") return;
    const a = new Funnel(await instance.open(), clock);
    const b = new Funnel(await instance.open(), clock);
    try {
      assert.equal((await a.call("PUT", "both", { "stream-ttl": "10" }, "z"))[0], 201);
      clock.advance(6_000);
      assert.deepEqual(await a.call("GET", "both"), [200, "z"]);
      // Recorded at +6 s (the read's entry commits in the background): B counts from it.
      await waitFor(async () => (await b.first("both")) === 0 && (await newestSeq(b)) === 1);
      clock.advance(8_000);
      // HEAD, which does not extend the TTL (a GET here would be a read of its own).
      assert.equal((await b.call("HEAD", "both"))[0], 200);
      clock.advance(3_000);
      assert.equal((await b.call("HEAD", "both"))[0], 404);
      assert.equal((await b.call("GET", "both"))[0], 404);
      assert.equal((await a.call("POST", "both", {}, "late"))[0], 404);
    } finally {
      await a.close();
      await b.close();
    }
  },
);

async function newestSeq(funnel: Funnel): Promise<number> {
  const track = await funnel.ledger.track({ broadcast: ["both"], track: "stream" }, false);
  return (await track!.backend.latest())?.seq ?? -1;
}

function waitFor(test: () => Promise<boolean>): Promise<void> {
  return until(test, "the background commit");
}

perBackend(
  "readers record a read at most once a second per stream, however short its TTL",
  async (instance, clock) => {
    const funnel = new Funnel(await instance.open(), clock);
    try {
      assert.equal((await funnel.call("PUT", "short", { "stream-ttl": "1" }, "s"))[0], 201);
      for (let i = 0; i < 30; i++) {
        clock.advance(100);
        assert.deepEqual(await funnel.call("GET", "short"), [200, "s"]);
      }
      // The recorded reads are committed in the background: wait for the third to land (a
      // loaded host may take a while) before closing, then count what was stored.
      const path = { broadcast: ["short"], track: "stream" };
      await until(
        async () => (await funnel.ledger.track(path, false))?.newest?.seq === 3,
        "the third recorded read to be committed",
      );
      await funnel.ledger.close();
      const reopened = new Ledger(await instance.open(), { clock: clock.nowNs, deadlineMs: 0 });
      const track = await reopened.track({ broadcast: ["short"], track: "stream" }, false);
      // 3 s of reads: the creation and one recorded read a second (half the TTL would be 6).
      assert.equal((await track!.backend.latest())!.seq, 3);
      await reopened.close();
    } finally {
      await funnel.close();
    }
  },
);

/** A backend that counts the tracks opened through it (each a pass's touch of a track's storage). */
function counting(backend: LedgerBackend): { backend: LedgerBackend; opened: () => number } {
  let opened = 0;
  const counted: LedgerBackend = {
    name: backend.name,
    listTracks: () => backend.listTracks(),
    openTrack: (path, create) => (opened++, backend.openTrack(path, create)),
    close: () => backend.close(),
    ...(backend.abandon ? { abandon: () => backend.abandon!() } : {}),
    ...(backend.follow ? { follow: (events) => backend.follow!(events) } : {}),
    ...(backend.exclusive
      ? { exclusive: <T>(name: string, task: () => Promise<T>) => backend.exclusive!(name, task) }
      : {}),
  };
  return { backend: counted, opened: () => opened };
}

perBackend(
  "a pass opens no track, reads each once, then leaves those with nothing to end unread until they change",
  async (instance, clock, harness) => {
    const before = new Funnel(await instance.open(), clock);
    try {
      for (let i = 0; i < 5; i++) {
        const track = await before.ledger.track({ broadcast: ["plain"], track: `t${i}` }, true);
        await track!.append({ payload: String(i) });
      }
      assert.equal((await before.call("PUT", "kept", {}, "k"))[0], 201);
      assert.equal((await before.call("PUT", "later", {}, "l"))[0], 201);
      assert.equal((await before.call("PUT", "ttl", { "stream-ttl": "3600" }, "t"))[0], 201);
    } finally {
      await before.close();
    }
    // A restart: nothing open.
    const { backend, opened } = counting(await instance.open());
    const funnel = new Funnel(backend, clock);
    try {
      assert.equal(await funnel.pass(), 0);
      assert.equal(funnel.ledger.openTracks, 0, "the pass opened no track");
      const first = opened();
      assert.equal(first, 8, "every track's storage read once");
      assert.equal(await funnel.pass(), 0);
      // Only the stream with a TTL is read again: the others hold nothing that can end.
      assert.equal(opened() - first, 1);
      assert.equal(funnel.ledger.openTracks, 0);
      // A stream without expiry deleted and made again with a TTL: the commit makes it read again.
      assert.equal((await funnel.call("DELETE", "later"))[0], 204);
      assert.equal((await funnel.call("PUT", "later", { "stream-ttl": "10" }, "again"))[0], 201);
      await until(() => !funnel.expiry.skips({ broadcast: ["later"], track: "stream" }), "told");
      clock.advance(16_000);
      assert.equal(
        await funnel.pass(),
        0,
        "expired after the last complete pass began: kept one pass more",
      );
      clock.advance(1_000);
      const removed = await funnel.pass();
      if (harness !== "directory") assert.ok(removed > 0, `removed ${removed}`);
      assert.equal((await funnel.call("GET", "later"))[0], 404);
      assert.deepEqual(await funnel.call("GET", "kept"), [200, "k"]);
    } finally {
      await funnel.close();
    }
  },
);
