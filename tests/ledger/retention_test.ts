// Retention on every backend, under an injected clock: a simulated week of steady
// posting under "keep 1 day" keeps storage flat after day one and loses no record
// inside the window; count and bytes limits; the newest record always stays.
import assert from "node:assert/strict";
import {
  Ledger,
  type LedgerEntry,
  MemoryBackend,
  Retention,
  type RetentionPolicy,
  type TrackLedger,
  type TrackPath,
} from "../../src/ledger/mod.ts";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { S3Backend } from "../../src/ledger/s3/s3_backend.ts";
import { ManualClock } from "../support/manual_clock.ts";
import { ignoreWithout } from "../support/requires.ts";
import { startS3Proxy } from "../support/s3_proxy.ts";
import { startS3rver } from "../support/s3rver.ts";
import { type BackendHarness, type BackendInstance, HARNESSES } from "./_backends.ts";

const DAY_NS = 86_400_000_000_000n;
const CHAT: TrackPath = { broadcast: ["chat", "room"], track: "msgs" };

const DAY_MS = 86_400_000;

/** A clock the test moves (the ledger reads it in Unix nanoseconds). */
function manualNanoClock(): ManualClock {
  return new ManualClock(1_800_000_000_000);
}

function perBackend(
  name: string,
  body: (instance: BackendInstance, harness: BackendHarness) => Promise<void>,
): void {
  for (const harness of HARNESSES) {
    const needs = harness.needs;
    if (needs?.missing) console.warn(`SKIP ${harness.name} retention: ${needs.missing}`);
    Deno.test({
      name: `retention ${harness.name}: ${name}`,
      ignore: needs ? ignoreWithout(needs.service, needs.missing) : false,
      async fn() {
        const instance = await harness.setup();
        try {
          await body(instance, harness);
        } finally {
          await instance.cleanup();
        }
      },
    });
  }
}

/** Every entry of the track from its first available one, oldest first. */
async function readAll(track: TrackLedger): Promise<LedgerEntry[]> {
  return await Array.fromAsync(track.entries({}));
}

function retention(ledger: Ledger, policy: RetentionPolicy, now: () => bigint): Retention {
  return new Retention(ledger, { config: { default: policy, rules: [] }, clock: now });
}

/** Stored units: files or objects when the backend has them, else stored entries. */
async function storedUnits(instance: BackendInstance, track: TrackLedger): Promise<number> {
  const names = await instance.rawNames();
  if (names.length > 0) return names.length;
  return (track.newest!.seq + 1) - await track.first();
}

perBackend(
  "a week under keep 1 day stays flat after day one and loses nothing in the window",
  async (instance, harness) => {
    const clock = manualNanoClock();
    const backend = await instance.open();
    const ledger = new Ledger(backend, { clock: clock.nowNs, deadlineMs: 0 });
    try {
      const track = (await ledger.track(CHAT, true))!;
      const keep = retention(ledger, { maxAgeMs: 86_400_000 }, clock.nowNs);
      // Every 2 hours, 6 records; a retention pass after each burst.
      const perBurst = 6;
      const burstsPerDay = 12;
      const acked: LedgerEntry[] = [];
      const units: number[] = [];
      for (let day = 0; day < 7; day++) {
        for (let burst = 0; burst < burstsPerDay; burst++) {
          for (let i = 0; i < perBurst; i++) {
            const payload = JSON.stringify({ day, burst, i, text: "x".repeat(80) });
            acked.push(await track.append({ payload }));
          }
          clock.advance(DAY_MS / burstsPerDay);
          await keep.pass();
        }
        units.push(await storedUnits(instance, track));
      }
      // Flat after day one: every later day stores about what day one did.
      const dayOne = units[0]!;
      for (const [day, n] of units.entries()) {
        assert.ok(
          n <= dayOne * 1.25 + 2,
          `${harness.name} day ${day + 1} stores ${n} units, day one ${dayOne}: ${units}`,
        );
      }
      // Nothing acknowledged inside the window is lost, and what is kept is contiguous.
      const oldest = clock.nowNs() - DAY_NS;
      const kept = await readAll(track);
      const first = await track.first();
      assert.equal(kept[0]!.seq, first);
      assert.deepEqual(kept.map((e) => e.seq), acked.slice(first).map((e) => e.seq));
      for (const entry of acked.filter((e) => e.wallclock >= oldest)) {
        assert.equal(kept[entry.seq - first]?.payload, entry.payload, `record ${entry.seq} lost`);
      }
      // And older records did go: far fewer than a week's are kept.
      assert.ok(first > acked.length / 2, `first available ${first} of ${acked.length}`);
      console.log(
        `${harness.name}: units per day ${units.join(" ")}; kept ${kept.length} of ${acked.length}`,
      );
    } finally {
      await ledger.close();
    }
  },
);

perBackend(
  "count and bytes limits keep the newest records, and the newest always stays",
  async (instance) => {
    const clock = manualNanoClock();
    const ledger = new Ledger(await instance.open(), { clock: clock.nowNs, deadlineMs: 0 });
    try {
      const track = (await ledger.track(CHAT, true))!;
      for (let i = 0; i < 200; i++) await track.append({ payload: JSON.stringify("y".repeat(98)) });
      // 100 bytes per payload: keep at most 5,000 bytes, so 50 records or a few more.
      const report = await retention(ledger, { maxBytes: 5_000 }, clock.nowNs).pass();
      const first = await track.first();
      assert.ok(first > 0 && first <= 150, `first ${first}`);
      assert.equal(report?.removed, first);
      assert.equal((await readAll(track)).length, 200 - first);
      await retention(ledger, { maxCount: 10 }, clock.nowNs).pass();
      const afterCount = await track.first();
      assert.ok(afterCount >= first && afterCount <= 190, `first ${afterCount}`);
      // An age limit that removes everything still keeps the newest record.
      clock.advance(DAY_MS * 30);
      await retention(ledger, { maxAgeMs: 1000 }, clock.nowNs).pass();
      const left = await readAll(track);
      assert.ok(left.length >= 1);
      assert.equal(left[left.length - 1]!.seq, 199);
      assert.equal((await track.backend.latest())?.seq, 199);
      // Numbering carries on after the newest.
      assert.equal((await track.append({ payload: "1" })).seq, 200);
    } finally {
      await ledger.close();
    }
  },
);

const pgHarness = HARNESSES.find((h) => h.name === "postgres")!;
Deno.test({
  name: "retention postgres: funnels sharing a table run passes one at a time",
  ignore: pgHarness.needs ? ignoreWithout(pgHarness.needs.service, pgHarness.needs.missing) : false,
  async fn() {
    const instance = await pgHarness.setup();
    const clock = manualNanoClock();
    const one = new Ledger(await instance.open(), { clock: clock.nowNs });
    const two = new Ledger(await instance.open(), { clock: clock.nowNs });
    try {
      const track = (await one.track(CHAT, true))!;
      for (let i = 0; i < 20; i++) await track.append({ payload: String(i) });
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      // The first funnel's pass holds the lock while the second one tries.
      const first = one.backend.exclusive!("retention", async () => {
        entered();
        await held;
        return "ran";
      });
      await inside;
      assert.equal(await retention(two, { maxCount: 5 }, clock.nowNs).pass(), undefined);
      assert.equal(await track.first(), 0, "the skipped pass removed nothing");
      release();
      assert.equal(await first, "ran");
      assert.equal((await retention(two, { maxCount: 5 }, clock.nowNs).pass())?.removed, 15);
    } finally {
      await one.close();
      await two.close();
      await instance.cleanup();
    }
  },
});

Deno.test("retention: byte tallies are kept for a bounded number of tracks", async () => {
  const clock = manualNanoClock();
  const ledger = new Ledger(new MemoryBackend(), { clock: clock.nowNs });
  const keep = new Retention(ledger, {
    config: { default: { maxBytes: 10 }, rules: [] },
    clock: clock.nowNs,
    tracked: 3,
  });
  for (let t = 0; t < 8; t++) {
    const track = (await ledger.track({ broadcast: ["many"], track: `t${t}` }, true))!;
    for (let i = 0; i < 4; i++) await track.append({ payload: JSON.stringify("abcdef") });
  }
  await keep.pass();
  assert.equal(keep.tallies, 3);
  // Every track was still cut to its limit: the newest 8-byte record only.
  for (let t = 0; t < 8; t++) {
    const track = (await ledger.track({ broadcast: ["many"], track: `t${t}` }, false))!;
    assert.equal(await track.first(), 3);
  }
  await ledger.close();
});

Deno.test("retention: what tracks store is counted for a bounded number of them, the rest said", async () => {
  const ledger = new Ledger(new MemoryBackend());
  // Not the default bound (10,000): 3, so 8 tracks overflow it. Without a bytes limit a track
  // beyond it is not read at all; the funnel's /metrics test runs at the default.
  const keep = new Retention(ledger, {
    config: { default: { maxCount: 2 }, rules: [] },
    tracked: 3,
  });
  for (let t = 0; t < 8; t++) {
    const track = (await ledger.track({ broadcast: ["many"], track: `t${t}` }, true))!;
    for (let i = 0; i < 4; i++) await track.append({ payload: JSON.stringify("abcdef") });
  }
  const first = (await keep.pass())!;
  assert.deepEqual(first.stored, { records: 6, bytes: 48, uncounted: 5 });
  assert.equal(keep.tallies, 3);
  assert.equal(first.removed, 16, "every track was still cut");
  const track = (await ledger.track({ broadcast: ["many"], track: "t0" }, false))!;
  await track.append({ payload: `"x"` });
  // Counted on from the last pass: t0 now keeps "abcdef" and "x" (8 + 3 bytes).
  assert.deepEqual((await keep.pass())!.stored, { records: 6, bytes: 43, uncounted: 5 });
  await ledger.close();
});

Deno.test("retention: a track whose storage fails holds up no other, and is tried again", async () => {
  const inner = new MemoryBackend();
  let failing = true;
  const backend = {
    name: "memory",
    listTracks: () => inner.listTracks(),
    close: () => inner.close(),
    async openTrack(path: TrackPath, create: boolean) {
      const track = await inner.openTrack(path, create);
      if (!track || path.track !== "bad") return track;
      return {
        ...Object.fromEntries(
          (["append", "latest", "readBefore", "readAfter", "get", "erasePayload", "first"] as const)
            .map((m) => [m, track[m].bind(track)]),
        ),
        trim: (before: number) =>
          failing ? Promise.reject(new Error("store away")) : track.trim(before),
      } as typeof track;
    },
  };
  const ledger = new Ledger(backend);
  const errors: string[] = [];
  const keep = new Retention(ledger, {
    config: { default: { maxCount: 2 }, rules: [] },
    onError: (path, error) => errors.push(`${path.track}: ${(error as Error).message}`),
  });
  for (const name of ["bad", "good"]) {
    const track = (await ledger.track({ broadcast: ["b"], track: name }, true))!;
    for (let i = 0; i < 5; i++) await track.append({ payload: "1" });
  }
  const report = await keep.pass();
  assert.deepEqual(errors, ["bad: store away"]);
  assert.equal(report?.failed, 1);
  assert.equal(report?.removed, 3, "the good track was cut");
  failing = false;
  assert.equal((await keep.pass())?.removed, 3, "the failed one is cut at the next pass");
  await ledger.close();
});

Deno.test("retention s3: a pass stopped between raising the floor and deleting serves nothing below it, and the next pass deletes the rest", async () => {
  const s3 = await startS3rver();
  const proxy = await startS3Proxy(s3);
  const backend = await S3Backend.open(proxy.backendOptions("stopped"));
  const ledger = new Ledger(backend, { deadlineMs: 0 });
  try {
    const track = (await ledger.track(CHAT, true))!;
    for (let i = 0; i < 10; i++) await track.append({ payload: String(i) });
    const keep = retention(ledger, { maxCount: 4 }, () => 0n);
    // Every DELETE fails (both SDK attempts): the floor object is written, the batches stay,
    // as when the process dies right after raising the floor.
    proxy.fail({ method: "DELETE" }, 500, 100);
    const stopped = await keep.pass();
    assert.equal(stopped?.failed, 1);
    const names = async () => (await listKeys(s3)).filter((k) => /\/data\/.+\/\d{16}$/.test(k));
    assert.equal((await names()).length, 10, "the batches below the floor are still stored");
    // A fresh process reads the floor: nothing below it is served.
    // (straight to s3rver: the proxy goes on failing every DELETE)
    const again = new Ledger(await S3Backend.open(s3.backendOptions("stopped")));
    const reopened = (await again.track(CHAT, false))!;
    assert.equal(await reopened.first(), 6);
    assert.deepEqual((await readAll(reopened)).map((e) => e.seq), [6, 7, 8, 9]);
    assert.equal(await reopened.backend.get(3), undefined);
    assert.deepEqual((await reopened.backend.readBefore(6, 10)).length, 0);
    // Deletes work again: the next pass removes the leftovers.
    assert.equal((await retention(again, { maxCount: 4 }, () => 0n).pass())?.failed, 0);
    assert.equal((await names()).length, 4);
    await again.close();
  } finally {
    await ledger.close();
    await proxy.close();
    await s3.stop();
  }
});

async function listKeys(s3: Awaited<ReturnType<typeof startS3rver>>): Promise<string[]> {
  const client = s3.client();
  try {
    const page = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
    return (page.Contents ?? []).map((o) => o.Key ?? "");
  } finally {
    client.destroy();
  }
}

Deno.test("retention: a record redacted between passes no longer counts under a bytes limit", async () => {
  const clock = manualNanoClock();
  const ledger = new Ledger(new MemoryBackend(), { clock: clock.nowNs });
  const keep = new Retention(ledger, {
    config: { default: { maxBytes: 1000 }, rules: [] },
    clock: clock.nowNs,
  });
  try {
    const track = (await ledger.track(CHAT, true))!;
    // Ten 100-byte payloads: exactly the limit, nothing goes (and the pass keeps a tally).
    for (let i = 0; i < 10; i++) await track.append({ payload: JSON.stringify("y".repeat(98)) });
    assert.equal((await keep.pass())?.removed, 0);
    // One is redacted (its payload erased, the redaction record carries none), one more comes:
    // 900 + 100 bytes kept, still the limit, so every record stays.
    await track.redact(4, undefined);
    await track.append({ payload: JSON.stringify("z".repeat(98)) });
    const kept = (await readAll(track)).reduce((n, e) => n + (e.payload?.length ?? 0), 0);
    assert.equal(kept, 1000);
    assert.equal((await keep.pass())?.removed, 0, "no record inside the byte window goes");
    assert.equal(await track.first(), 0);
  } finally {
    await ledger.close();
  }
});
