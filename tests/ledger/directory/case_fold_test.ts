// Track paths that differ only in case, on a directory ledger whose file
// system folds case (macOS, Windows defaults) and on one that does not (Linux).
//
// This machine has no case-folding mount (its kernel lacks CONFIG_UNICODE
// for ext4 casefold and has no vfat), so the folding tests inject the probe
// result and make `tracks/Room…` resolve to `tracks/room…` with a symlink:
// exactly what a folding file system does for that one name.
import assert from "node:assert/strict";
import {
  DirectoryBackend,
  foldsCase,
  Ledger,
  LedgerError,
  trackKey,
  type TrackPath,
} from "../../../src/ledger/mod.ts";
import { decodeStorageName, trackStorageName } from "../../../src/ledger/storage_name.ts";
import { withTempDir } from "../../support/temp_dir.ts";

const LOWER: TrackPath = { broadcast: ["room", "1"], track: "chat" };
const UPPER: TrackPath = { broadcast: ["Room", "1"], track: "chat" };

async function payloads(
  ledger: Ledger,
  path: TrackPath,
): Promise<(string | undefined)[] | undefined> {
  const track = await ledger.track(path, false);
  if (!track) return undefined;
  return (await track.backend.readBefore(undefined, 100)).reverse().map((e) => e.payload);
}

/** Makes `other` resolve to `path`'s directory, as a case-folding file system would. */
async function foldOnto(dir: string, path: TrackPath, other: TrackPath): Promise<void> {
  const target = await trackStorageName(path);
  await Deno.symlink(target, `${dir}/tracks/${await trackStorageName(other)}`);
}

Deno.test("case: the probe finds this machine's temporary directory case-sensitive and leaves nothing", async () => {
  await withTempDir(async (dir) => {
    assert.equal(await foldsCase(dir), false);
    assert.deepEqual(await Array.fromAsync(Deno.readDir(dir)), []);
  });
});

Deno.test("case: on a folding file system a track differing only in case is absent, and refused with the stored track's name", async () => {
  await withTempDir(async (dir) => {
    const ledger = new Ledger(await DirectoryBackend.open(dir, { foldsCase: true }));
    try {
      const room = (await ledger.track(LOWER, true))!;
      for (let i = 0; i < 3; i++) await room.append({ payload: `{"room":${i}}` });
      await foldOnto(dir, LOWER, UPPER);
      // Before the fix, Room/1/chat opened room's directory: its reader saw room's records
      // and its appends took room's sequence numbers.
      assert.equal(await payloads(ledger, UPPER), undefined, "Room/1/chat does not exist");
      await assert.rejects(
        () => ledger.track(UPPER, true),
        (error: unknown) => {
          assert.ok(error instanceof LedgerError);
          assert.equal(error.code, "conflict");
          assert.match(error.message, /"Room\/1\/chat" differs only in case/);
          assert.match(error.message, /stored track "room\/1\/chat"/);
          return true;
        },
      );
      assert.deepEqual(await payloads(ledger, LOWER), [0, 1, 2].map((i) => `{"room":${i}}`));
    } finally {
      await ledger.close();
    }
  });
});

Deno.test("case: after a restart on a folding file system the stored spelling still wins", async () => {
  await withTempDir(async (dir) => {
    let ledger = new Ledger(await DirectoryBackend.open(dir, { foldsCase: true }));
    await (await ledger.track(UPPER, true))!.append({ payload: `{"first":true}` });
    await ledger.close();
    await foldOnto(dir, UPPER, LOWER);
    ledger = new Ledger(await DirectoryBackend.open(dir, { foldsCase: true }));
    try {
      assert.equal(await payloads(ledger, LOWER), undefined);
      await assert.rejects(
        () => ledger.track(LOWER, true),
        (e: unknown) =>
          e instanceof LedgerError && e.code === "conflict" &&
          e.message.includes('stored track "Room/1/chat"'),
      );
      assert.deepEqual(await payloads(ledger, UPPER), [`{"first":true}`]);
      assert.deepEqual((await ledger.backend.listTracks()).map(trackKey), ["Room/1/chat"]);
    } finally {
      await ledger.close();
    }
  });
});

Deno.test("case: at the default (probed) on Linux, Room and room are two tracks with their own records", async () => {
  await withTempDir(async (dir) => {
    const ledger = new Ledger(await DirectoryBackend.open(dir));
    try {
      await (await ledger.track(LOWER, true))!.append({ payload: `{"lower":0}` });
      await (await ledger.track(UPPER, true))!.append({ payload: `{"upper":0}` });
      await (await ledger.track(UPPER, true))!.append({ payload: `{"upper":1}` });
      assert.deepEqual(await payloads(ledger, LOWER), [`{"lower":0}`]);
      assert.deepEqual(await payloads(ledger, UPPER), [`{"upper":0}`, `{"upper":1}`]);
      const names = (await Array.fromAsync(Deno.readDir(`${dir}/tracks`))).map((d) => d.name);
      // The layout older versions read: one readable directory per track, spelt as the path.
      assert.deepEqual(names.sort(), ["Room%2F1%2Fchat", "room%2F1%2Fchat"]);
    } finally {
      await ledger.close();
    }
  });
});

Deno.test("case: hashed names and non-ASCII escapes never fold together, so both tracks are kept", async () => {
  const long = (first: string): TrackPath => ({ broadcast: [first, "x".repeat(200)], track: "t" });
  const pairs: [TrackPath, TrackPath][] = [
    // Hashed: `~` + lower-case hex of the exact-case path, so the two hashes simply differ.
    [long("room"), long("Room")],
    // é and É are the bytes C3 A9 and C3 89: escapes differ in digits, not in letter case.
    [{ broadcast: ["caf\u00e9"], track: "t" }, { broadcast: ["caf\u00c9"], track: "t" }],
  ];
  for (const [a, b] of pairs) {
    const [na, nb] = [await trackStorageName(a), await trackStorageName(b)];
    assert.notEqual(na.toLowerCase(), nb.toLowerCase(), `${na} and ${nb} fold apart`);
  }
  assert.match(await trackStorageName(long("Room")), /^~[0-9a-f]{64}$/);
  assert.equal(await trackStorageName(pairs[1]![1]), "caf%C3%89%2Ft");
  // The escapes written are upper-case hex; a lower-case spelling is not one of ours.
  assert.equal(decodeStorageName("caf%c3%89%2ft"), undefined);
  await withTempDir(async (dir) => {
    const ledger = new Ledger(await DirectoryBackend.open(dir, { foldsCase: true }));
    try {
      for (const [i, [a, b]] of pairs.entries()) {
        await (await ledger.track(a, true))!.append({ payload: `{"a":${i}}` });
        await (await ledger.track(b, true))!.append({ payload: `{"b":${i}}` });
        assert.deepEqual(await payloads(ledger, a), [`{"a":${i}}`]);
        assert.deepEqual(await payloads(ledger, b), [`{"b":${i}}`]);
      }
    } finally {
      await ledger.close();
    }
  });
});

Deno.test("case: an ASCII letter beside an escape still folds: a.B and a.b conflict where case folds", async () => {
  await withTempDir(async (dir) => {
    const dotted: TrackPath = { broadcast: ["a.B"], track: "t" };
    const lower: TrackPath = { broadcast: ["a.b"], track: "t" };
    assert.equal(await trackStorageName(dotted), "a%2EB%2Ft");
    const ledger = new Ledger(await DirectoryBackend.open(dir, { foldsCase: true }));
    try {
      await (await ledger.track(dotted, true))!.append({ payload: "{}" });
      await assert.rejects(
        () => ledger.track(lower, true),
        (e: unknown) => e instanceof LedgerError && e.code === "conflict",
      );
    } finally {
      await ledger.close();
    }
  });
});
