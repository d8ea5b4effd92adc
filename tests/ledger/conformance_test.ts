// The same behaviour, checked against every backend: memory, directory, PostgreSQL and S3.
import assert from "node:assert/strict";
import {
  entryGroup,
  Ledger,
  type LedgerBackend,
  type LedgerEntry,
  type TrackBackend,
  trackKey,
  type TrackPath,
} from "../../src/ledger/mod.ts";
import { ignoreWithout } from "../support/requires.ts";
import { type BackendHarness, type BackendInstance, HARNESSES } from "./_backends.ts";

/** A clock that advances one microsecond per reading, starting at a large exact value. */
function testClock(): () => bigint {
  let now = 1_700_000_000_123_456_789n;
  return () => (now += 1000n);
}

const ROOM: TrackPath = { broadcast: ["room", "1"], track: "chat" };

async function readAll(track: TrackBackend): Promise<LedgerEntry[]> {
  const out: LedgerEntry[] = [];
  let before: number | undefined;
  while (true) {
    const page = await track.readBefore(before, 7);
    if (page.length === 0) break;
    out.push(...page);
    before = page[page.length - 1]!.seq;
  }
  return out.reverse();
}

function conformance(
  harness: BackendHarness,
  name: string,
  body: (instance: BackendInstance) => Promise<void>,
): void {
  const needs = harness.needs;
  if (needs?.missing) console.warn(`SKIP ${harness.name} ledger conformance: ${needs.missing}`);
  Deno.test({
    name: `ledger ${harness.name}: ${name}`,
    ignore: needs ? ignoreWithout(needs.service, needs.missing) : false,
    async fn() {
      const instance = await harness.setup();
      try {
        await body(instance);
      } finally {
        await instance.cleanup();
      }
    },
  });
}

async function withLedger<T>(
  instance: BackendInstance,
  f: (ledger: Ledger, backend: LedgerBackend) => Promise<T>,
): Promise<T> {
  const backend = await instance.open();
  const ledger = new Ledger(backend, { clock: testClock() });
  try {
    return await f(ledger, backend);
  } finally {
    await ledger.close();
  }
}

for (const harness of HARNESSES) {
  conformance(harness, "append, latest and paging with before", async (instance) => {
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, true))!;
      assert.equal(await track.backend.latest(), undefined);
      assert.deepEqual(await track.backend.readBefore(undefined, 10), []);
      for (let i = 0; i < 60; i++) {
        const entry = await track.append({ payload: `{"n":${i}}`, sender: `s${i % 3}` });
        assert.equal(entry.seq, i);
        assert.equal(entryGroup(entry), `e000001-g${String(i).padStart(8, "0")}`);
      }
      const latest = await track.backend.latest();
      assert.equal(latest?.seq, 59);
      assert.equal(latest?.payload, `{"n":59}`);
      const newest = await track.backend.readBefore(undefined, 25);
      assert.deepEqual(newest.map((e) => e.seq), Array.from({ length: 25 }, (_, i) => 59 - i));
      const middle = await track.backend.readBefore(30, 10);
      assert.deepEqual(middle.map((e) => e.seq), [29, 28, 27, 26, 25, 24, 23, 22, 21, 20]);
      assert.deepEqual((await track.backend.readBefore(3, 10)).map((e) => e.seq), [2, 1, 0]);
      assert.deepEqual(await track.backend.readBefore(0, 10), []);
      assert.deepEqual((await track.backend.readBefore(1000, 2)).map((e) => e.seq), [59, 58]);
      const all = await readAll(track.backend);
      assert.deepEqual(
        all.map((e) => e.payload),
        Array.from({ length: 60 }, (_, i) => `{"n":${i}}`),
      );
      assert.deepEqual(all.map((e) => e.sender), all.map((_, i) => `s${i % 3}`));
      // Wallclocks are exact nanosecond integers and never go backwards.
      for (let i = 1; i < all.length; i++) assert.ok(all[i]!.wallclock >= all[i - 1]!.wallclock);
      assert.ok(all[0]!.wallclock > 1_700_000_000_123_456_789n);
    });
  });

  conformance(harness, "paging forward with after", async (instance) => {
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, true))!;
      assert.deepEqual(await track.backend.readAfter(undefined, 10), []);
      // Batches of several entries (concurrent appends) and of one, so pages cross batches.
      await Promise.all(Array.from({ length: 30 }, (_, i) => track.append({ payload: `${i}` })));
      for (let i = 30; i < 60; i++) await track.append({ payload: `${i}` });
      const seqs = async (after: number | undefined, limit: number) =>
        (await track.backend.readAfter(after, limit)).map((e) => e.seq);
      assert.deepEqual(await seqs(undefined, 25), Array.from({ length: 25 }, (_, i) => i));
      assert.deepEqual(await seqs(24, 10), [25, 26, 27, 28, 29, 30, 31, 32, 33, 34]);
      assert.deepEqual(await seqs(-1, 3), [0, 1, 2]);
      assert.deepEqual(await seqs(55, 10), [56, 57, 58, 59]);
      assert.deepEqual(await seqs(59, 10), []);
      assert.deepEqual(await seqs(1000, 5), []);
      assert.deepEqual(await seqs(10, 0), []);
      const forward: LedgerEntry[] = [];
      let after: number | undefined;
      while (true) {
        const page = await track.backend.readAfter(after, 7);
        if (page.length === 0) break;
        forward.push(...page);
        after = page[page.length - 1]!.seq;
      }
      assert.deepEqual(forward, await readAll(track.backend));
      assert.deepEqual(forward.map((e) => e.payload), forward.map((_, i) => `${i}`));
    });
  });

  conformance(harness, "entry streams read from any point, both ways", async (instance) => {
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, true))!;
      assert.deepEqual(await Array.fromAsync(track.entries()), []);
      for (let i = 0; i < 40; i++) await track.append({ payload: `"m${i}"`, sender: "s" });
      await track.redact(12, "mod");
      const seqs = async (stream: ReadableStream<LedgerEntry>) =>
        (await Array.fromAsync(stream)).map((e) => e.seq);
      const range = (from: number, to: number) =>
        Array.from({ length: Math.abs(to - from) + 1 }, (_, i) => from < to ? from + i : from - i);
      assert.deepEqual(await seqs(track.entries({}, { pageSize: 7 })), range(0, 40));
      assert.deepEqual(
        await seqs(track.entries({ after: 10, limit: 20 }, { pageSize: 6 })),
        range(11, 30),
      );
      assert.deepEqual(await seqs(track.entries({ after: 35 })), range(36, 40));
      assert.deepEqual(await seqs(track.entries({ after: 40 })), []);
      assert.deepEqual(
        await seqs(track.entries({ direction: "backward" }, { pageSize: 9 })),
        range(40, 0),
      );
      assert.deepEqual(
        await seqs(track.entries({ direction: "backward", before: 30, limit: 5 })),
        range(29, 25),
      );
      assert.deepEqual(await seqs(track.entries({ direction: "backward", before: 0 })), []);
      // A redacted record reads as stored: no payload, marked redacted; its redaction follows.
      const [redacted] = await Array.fromAsync(track.entries({ after: 11, limit: 1 }));
      assert.equal(redacted?.redacted, true);
      assert.equal(redacted?.payload, undefined);
      const [redaction] = await Array.fromAsync(track.entries({ after: 39 }));
      assert.equal(redaction?.redacts, "e000001-g00000012");
    });
  });

  conformance(harness, "get finds one entry and nothing else", async (instance) => {
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, true))!;
      assert.equal(await track.backend.get(0), undefined);
      for (let i = 0; i < 12; i++) await track.append({ payload: `"v${i}"` });
      const got = await track.backend.get(7);
      assert.equal(got?.seq, 7);
      assert.equal(got?.payload, `"v7"`);
      assert.equal(got?.sender, undefined);
      assert.equal(await track.backend.get(12), undefined);
      assert.equal(await track.backend.get(-1), undefined);
      assert.equal(await track.backend.get(1.5), undefined);
    });
  });

  conformance(harness, "fields round-trip exactly", async (instance) => {
    const payload = '{ "text" : "héllo 🌊\\n", "n": [1, 2.50, null] }';
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, true))!;
      await track.append({ payload, sender: "ünïcode sender", idempotencyKey: "key-1" });
      await track.append({ payload: "null" });
    });
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, false))!;
      const [second, first] = await track.backend.readBefore(undefined, 5);
      assert.equal(first?.payload, payload);
      assert.equal(first?.sender, "ünïcode sender");
      assert.equal(first?.idempotencyKey, "key-1");
      assert.equal(first?.epoch, 1);
      assert.equal(second?.payload, "null");
      assert.equal(second?.idempotencyKey, undefined);
      assert.equal(second?.sender, undefined);
      assert.equal(typeof second?.wallclock, "bigint");
    });
  });

  conformance(harness, "redaction deletes the payload from storage", async (instance) => {
    const secret = `secret-${crypto.randomUUID()}`;
    const kept = `kept-${crypto.randomUUID()}`;
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, true))!;
      for (let i = 0; i < 20; i++) await track.append({ payload: `"filler ${i}"` });
      const target = await track.append({ payload: `"${secret}"`, sender: "alice" });
      await track.append({ payload: `"${kept}"` });
      for (let i = 0; i < 20; i++) await track.append({ payload: `"filler after ${i}"` });
      assert.ok(await instance.rawContains(secret), "the payload is stored before redaction");

      const outcome = await track.redact(target.seq, "moderator");
      assert.equal(outcome.redaction?.redacts, entryGroup(target));
      assert.equal(outcome.redaction?.sender, "moderator");
      const redacted = await track.backend.get(target.seq);
      assert.equal(redacted?.redacted, true);
      assert.equal(redacted?.payload, undefined);
      assert.equal(redacted?.sender, "alice");
      assert.equal(await instance.rawContains(secret), false, "payload bytes must be gone");
      assert.ok(await instance.rawContains(kept), "other records are untouched");
      assert.deepEqual(await track.redact(target.seq, "moderator"), { already: true });
      // A redaction of a redaction is the caller's bad request, by its class and code.
      await assert.rejects(track.redact(outcome.redaction!.seq, undefined), {
        name: "LedgerError",
        code: "invalid_request",
      });
      await assert.rejects(track.redact(10_000, undefined), { name: "LedgerError" });
      // Appends continue normally after a rewrite.
      const after = await track.append({ payload: `"after"` });
      assert.equal(after.seq, outcome.redaction!.seq + 1);
    });
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, false))!;
      const all = await readAll(track.backend);
      assert.equal(all.length, 44);
      assert.deepEqual(all.map((e) => e.seq), all.map((_, i) => i));
      assert.equal(all[20]?.redacted, true);
      assert.equal(all[20]?.payload, undefined);
      assert.equal(all[21]?.payload, `"${kept}"`);
      assert.equal(all[42]?.redacts, "e000001-g00000020");
    });
  });

  conformance(harness, "redacting the newest record", async (instance) => {
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, true))!;
      const only = await track.append({ payload: `"only-${harness.name}-x"` });
      await track.redact(only.seq, undefined);
      assert.equal(await instance.rawContains(`only-${harness.name}-x`), false);
      const [redaction, record] = await track.backend.readBefore(undefined, 2);
      assert.equal(redaction?.redacts, "e000001-g00000000");
      assert.equal(redaction?.sender, undefined);
      assert.equal(record?.redacted, true);
    });
  });

  conformance(harness, "lists tracks, including empty ones made by PUT", async (instance) => {
    const empty: TrackPath = { broadcast: ["room", "2"], track: "presence" };
    const absent: TrackPath = { broadcast: ["nobody"], track: "here" };
    await withLedger(instance, async (ledger, backend) => {
      assert.deepEqual(await backend.listTracks(), []);
      assert.ok(await ledger.track(empty, true));
      const room = (await ledger.track(ROOM, true))!;
      await room.append({ payload: "1" });
      assert.equal(await ledger.track(absent, false), undefined);
      assert.equal(await backend.openTrack(absent, false), undefined);
    });
    await withLedger(instance, async (ledger, backend) => {
      const keys = (await backend.listTracks()).map(trackKey).sort();
      assert.deepEqual(keys, ["room/1/chat", "room/2/presence"]);
      const reopened = await ledger.track(empty, false);
      assert.ok(reopened, "an empty PUT-created track exists after reopening");
      assert.equal(reopened.newest, undefined);
      assert.equal(await ledger.track(absent, false), undefined);
    });
  });

  conformance(harness, "reopening sees everything and continues numbering", async (instance) => {
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, true))!;
      await Promise.all(Array.from({ length: 50 }, (_, i) => track.append({ payload: `${i}` })));
    });
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, false))!;
      assert.equal(track.newest?.seq, 49);
      const next = await track.append({ payload: `"next"` });
      assert.equal(next.seq, 50);
      assert.ok(next.wallclock >= track.newest!.wallclock);
      const all = await readAll(track.backend);
      assert.equal(all.length, 51);
      assert.deepEqual(all.map((e) => e.seq), all.map((_, i) => i));
    });
  });

  conformance(harness, "concurrent appends keep commit order", async (instance) => {
    await withLedger(instance, async (ledger) => {
      const track = (await ledger.track(ROOM, true))!;
      const other = (await ledger.track({ broadcast: ["room", "3"], track: "other" }, true))!;
      const results = await Promise.all(
        Array.from(
          { length: 300 },
          (_, i) =>
            (i % 5 === 0 ? other : track).append({
              payload: `{"i":${i}}`,
              idempotencyKey: `k${i}`,
            }),
        ),
      );
      const all = await readAll(track.backend);
      assert.equal(all.length, 240);
      const bySeq = new Map(all.map((e) => [e.seq, e.payload]));
      for (const [i, entry] of results.entries()) {
        if (i % 5 === 0) continue;
        assert.equal(bySeq.get(entry.seq), `{"i":${i}}`, "each caller got its own stored seq");
      }
      // Appends queued in call order commit in that order.
      const order = all.map((e) => JSON.parse(e.payload!).i as number);
      assert.deepEqual(order, [...order].sort((a, b) => a - b));
      assert.equal((await readAll(other.backend)).length, 60);
      // The last 1024 idempotency keys are recoverable after a restart from one page read.
      const keys = (await track.backend.readBefore(undefined, 1024)).map((e) => e.idempotencyKey);
      assert.equal(new Set(keys).size, 240);
    });
  });

  conformance(harness, "tracks that differ only in case are two tracks", async (instance) => {
    // Linux directories, PostgreSQL text and S3 keys compare case-sensitively;
    // a directory ledger on a case-folding file system refuses the second instead.
    const upper: TrackPath = { broadcast: ["Room", "1"], track: "Chat" };
    await withLedger(instance, async (ledger) => {
      await (await ledger.track(ROOM, true))!.append({ payload: `{"lower":0}` });
      await (await ledger.track(upper, true))!.append({ payload: `{"upper":0}` });
      await (await ledger.track(upper, true))!.append({ payload: `{"upper":1}` });
    });
    await withLedger(instance, async (ledger, backend) => {
      const listed = (await backend.listTracks()).map(trackKey).sort();
      assert.deepEqual(listed, ["Room/1/Chat", "room/1/chat"]);
      const all = async (path: TrackPath) =>
        (await readAll((await ledger.track(path, false))!.backend)).map((e) => [e.seq, e.payload]);
      assert.deepEqual(await all(ROOM), [[0, `{"lower":0}`]]);
      assert.deepEqual(await all(upper), [[0, `{"upper":0}`], [1, `{"upper":1}`]]);
    });
  });

  conformance(harness, "hostile but valid names stay inside storage", async (instance) => {
    const paths: TrackPath[] = [
      { broadcast: ["%"], track: "%2F" },
      { broadcast: ["..a", "名前 with spaces"], track: "🌊 track" },
      { broadcast: ["a b"], track: "~looks-hashed" },
      { broadcast: [".hidden"], track: "x" },
      { broadcast: ["a%2Fb"], track: "c" },
      { broadcast: ["a", "b"], track: "c" },
      { broadcast: ["x".repeat(400), "y".repeat(300)], track: "z".repeat(300) },
      { broadcast: ["ü".repeat(200)], track: "long unicode" },
      { broadcast: ["quote'", 'dq"'], track: "semi;--" },
    ];
    await withLedger(instance, async (ledger) => {
      for (const [i, path] of paths.entries()) {
        const track = (await ledger.track(path, true))!;
        await track.append({ payload: `{"track":${i}}` });
      }
    });
    await withLedger(instance, async (ledger, backend) => {
      const listed = (await backend.listTracks()).map(trackKey).sort();
      assert.deepEqual(listed, paths.map(trackKey).sort());
      for (const [i, path] of paths.entries()) {
        const track = (await ledger.track(path, false))!;
        assert.equal(track.newest?.payload, `{"track":${i}}`, trackKey(path));
      }
    });
    if (instance.container) {
      const names = await instance.rawNames();
      assert.ok(names.length > 0);
      for (const name of names) {
        assert.ok(
          name.startsWith(instance.container) &&
            !name.slice(instance.container.length).includes(".."),
          `stored name ${name} stays inside ${instance.container}`,
        );
      }
    }
  });
}
