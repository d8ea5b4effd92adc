// Directory backend specifics: torn tails, crash leftovers, relative file: URIs.
import assert from "node:assert/strict";
import {
  DirectoryBackend,
  Ledger,
  type LedgerEntry,
  OPEN_TRACKS,
  openBackend,
  parseLedgerUri,
  type TrackPath,
} from "../../../src/ledger/mod.ts";
import { withTempDir } from "../../support/temp_dir.ts";
import { walkFiles } from "../_backends.ts";

const PATH: TrackPath = { broadcast: ["b"], track: "t" };

async function appendN(dir: string, n: number, from = 0): Promise<void> {
  const ledger = new Ledger(await DirectoryBackend.open(dir));
  try {
    const track = (await ledger.track(PATH, true))!;
    for (let i = from; i < from + n; i++) await track.append({ payload: `{"i":${i}}` });
  } finally {
    await ledger.close();
  }
}

async function segmentFiles(dir: string): Promise<string[]> {
  return (await walkFiles(dir)).filter((f) => f.endsWith(".seg")).sort().map((f) => `${dir}/${f}`);
}

async function readAll(dir: string): Promise<LedgerEntry[]> {
  const ledger = new Ledger(await DirectoryBackend.open(dir));
  try {
    const track = (await ledger.track(PATH, false))!;
    return (await track.backend.readBefore(undefined, 10_000)).reverse();
  } finally {
    await ledger.close();
  }
}

async function appendBytes(file: string, bytes: Uint8Array): Promise<void> {
  const handle = await Deno.open(file, { append: true });
  try {
    await handle.write(bytes);
  } finally {
    handle.close();
  }
}

Deno.test("directory: a torn tail frame is truncated at open and never served", async () => {
  await withTempDir(async (dir) => {
    await appendN(dir, 5);
    const [segment] = await segmentFiles(dir);
    const before = (await Deno.stat(segment!)).size;
    // A frame header announcing 100 bytes, followed by only part of a body: a write cut short.
    const torn = new Uint8Array([100, 0, 0, 0, 1, 2, 3, 4, ...new TextEncoder().encode('[{"e":1')]);
    await appendBytes(segment!, torn);
    const entries = await readAll(dir);
    assert.deepEqual(entries.map((e) => e.payload), [0, 1, 2, 3, 4].map((i) => `{"i":${i}}`));
    assert.equal((await Deno.stat(segment!)).size, before, "the torn bytes are gone from disk");
    await appendN(dir, 2, 5);
    assert.deepEqual((await readAll(dir)).map((e) => e.seq), [0, 1, 2, 3, 4, 5, 6]);
  });
});

Deno.test("directory: a complete frame with a bad checksum is treated as torn", async () => {
  await withTempDir(async (dir) => {
    await appendN(dir, 3);
    const [segment] = await segmentFiles(dir);
    const bytes = await Deno.readFile(segment!);
    // Flip one byte inside the last frame's body (its closing bracket, before the
    // 4-byte length trailer): the frame is whole but its checksum no longer matches.
    const at = bytes.length - 5;
    assert.equal(String.fromCharCode(bytes[at]!), "]");
    bytes[at] = bytes[at]! ^ 0x01;
    await Deno.writeFile(segment!, bytes);
    const entries = await readAll(dir);
    assert.deepEqual(entries.map((e) => e.seq), [0, 1]);
    await appendN(dir, 1, 100);
    const after = await readAll(dir);
    assert.deepEqual(after.map((e) => e.seq), [0, 1, 2]);
    assert.equal(after[2]?.payload, `{"i":100}`);
  });
});

Deno.test("directory: segments roll and an empty last segment from a crashed roll is harmless", async () => {
  await withTempDir(async (dir) => {
    const ledger = new Ledger(await DirectoryBackend.open(dir, { segmentBytes: 256 }));
    const track = (await ledger.track(PATH, true))!;
    for (let i = 0; i < 40; i++) await track.append({ payload: `{"i":${i}}` });
    await ledger.close();
    const segments = await segmentFiles(dir);
    assert.ok(segments.length > 3, `expected several segments, got ${segments.length}`);
    // A crash right after creating the next segment file leaves it empty.
    const trackDir = segments[0]!.slice(0, segments[0]!.lastIndexOf("/"));
    await Deno.writeFile(`${trackDir}/${String(40).padStart(16, "0")}.seg`, new Uint8Array());
    await Deno.writeFile(`${trackDir}/${String(3).padStart(16, "0")}.seg.tmp`, new Uint8Array(9));
    const again = new Ledger(await DirectoryBackend.open(dir, { segmentBytes: 256 }));
    const reopened = (await again.track(PATH, false))!;
    assert.equal(reopened.newest?.seq, 39);
    assert.equal((await reopened.append({ payload: "40" })).seq, 40);
    const all = (await reopened.backend.readBefore(undefined, 100)).reverse();
    assert.deepEqual(all.map((e) => e.seq), Array.from({ length: 41 }, (_, i) => i));
    await again.close();
    assert.equal((await walkFiles(dir)).some((f) => f.endsWith(".tmp")), false);
  });
});

Deno.test("directory: a crash during track creation leaves no half-made track", async () => {
  await withTempDir(async (dir) => {
    await appendN(dir, 1);
    await Deno.mkdir(`${dir}/tracks/.tmp-crashed`);
    const backend = await DirectoryBackend.open(dir);
    assert.deepEqual(await backend.listTracks(), [PATH]);
    await backend.close();
    assert.equal((await walkFiles(dir)).some((f) => f.includes(".tmp-")), false);
  });
});

Deno.test("directory: file: URIs, relative and absolute, open a directory backend", async () => {
  await withTempDir(async (dir) => {
    const absolute = await openBackend(parseLedgerUri(`file://${dir}/abs`));
    assert.equal(absolute.name, "directory");
    await (await absolute.openTrack(PATH, true))!.append([
      { epoch: 1, seq: 0, wallclock: 5n, payload: "1" },
    ]);
    await absolute.close();
    assert.equal((await readAll(`${dir}/abs`)).length, 1);

    // A relative directory resolves against the working directory; chdir would race other
    // test files in this process, so open it from a child process started in `dir`.
    const mod = new URL("../../../src/ledger/mod.ts", import.meta.url).href;
    const script = `const m = await import(${JSON.stringify(mod)});
      const b = await m.openBackend(m.parseLedgerUri("file:rel/ledger"));
      await b.openTrack({ broadcast: ["b"], track: "t" }, true);
      await b.close();`;
    const child = await new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        "--quiet",
        `--config=${new URL("../../../deno.json", import.meta.url).pathname}`,
        script,
      ],
      cwd: dir,
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    assert.equal(child.code, 0);
    assert.ok((await Deno.stat(`${dir}/rel/ledger/tracks`)).isDirectory);
  });
});

Deno.test("ledger location: a table that is not an identifier is a startup error", () => {
  assert.throws(() => parseLedgerUri("postgres://u@h:5432/db?table=x;drop"), TypeError);
  assert.throws(() => parseLedgerUri("postgres://u@h:5432/db?table=a%20b"), TypeError);
  const ok = parseLedgerUri("postgres://u@h:5432/db?table=my_ledger");
  assert.equal(ok.kind === "postgres" && ok.table, "my_ledger");
  assert.throws(() => parseLedgerUri("/var/ledger"), TypeError);
  assert.throws(() => parseLedgerUri("ftp://x/y"), TypeError);
});

Deno.test("directory: opening, latest and recent pages never read older segments", async () => {
  await withTempDir(async (dir) => {
    const ledger = new Ledger(await DirectoryBackend.open(dir, { segmentBytes: 512 }));
    const track = (await ledger.track(PATH, true))!;
    for (let i = 0; i < 60; i++) await track.append({ payload: `{"i":${i}}` });
    await ledger.close();
    const segments = await segmentFiles(dir);
    assert.ok(segments.length >= 4);
    // Damage the oldest segment: anything that reads it must notice.
    await Deno.writeFile(segments[0]!, new TextEncoder().encode("not a segment"));
    const again = new Ledger(await DirectoryBackend.open(dir, { segmentBytes: 512 }));
    try {
      const reopened = (await again.track(PATH, false))!;
      assert.equal(reopened.newest?.payload, `{"i":59}`);
      const page = await reopened.backend.readBefore(undefined, 5);
      assert.deepEqual(page.map((e) => e.seq), [59, 58, 57, 56, 55]);
      await assert.rejects(reopened.backend.readBefore(2, 5), { name: "LedgerError" });
    } finally {
      await again.close();
    }
  });
});

/** File descriptors of this process open on files under `dir`. */
function filesOpenUnder(dir: string): number {
  let n = 0;
  for (const fd of Deno.readDirSync("/proc/self/fd")) {
    try {
      if (Deno.readLinkSync(`/proc/self/fd/${fd.name}`).startsWith(`${dir}/`)) n++;
    } catch {
      // Closed meanwhile.
    }
  }
  return n;
}

Deno.test("directory: open files stay within OPEN_TRACKS however many tracks are written, and none is kept by opening", async () => {
  await withTempDir(async (dir) => {
    const tracks = OPEN_TRACKS + 72;
    const path = (i: number): TrackPath => ({ broadcast: ["many"], track: `t${i}` });
    const ledger = new Ledger(await DirectoryBackend.open(dir));
    try {
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < tracks; i++) {
          await (await ledger.track(path(i), true))!.append({ payload: `{"i":${i},"r":${round}}` });
        }
      }
      // Evicted tails close once their track is idle: a turn of the event loop.
      await new Promise((r) => setTimeout(r, 0));
      // The tails of the most recently used tracks, and the writer lock.
      const open = filesOpenUnder(dir);
      assert.ok(open <= OPEN_TRACKS + 1, `${open} files open for ${tracks} tracks`);
      for (let i = 0; i < tracks; i++) {
        const entries = await (await ledger.track(path(i), false))!.backend.readAfter(undefined, 9);
        assert.deepEqual(entries.map((e) => e.payload), [`{"i":${i},"r":0}`, `{"i":${i},"r":1}`]);
      }
    } finally {
      await ledger.close();
    }
    assert.equal(filesOpenUnder(dir), 0, "closing the ledger closes every file");

    // A restart opens every track to read its newest record, and keeps none of them open.
    const again = new Ledger(await DirectoryBackend.open(dir));
    try {
      for (const p of await again.tracks()) assert.ok((await again.track(p, false))?.newest);
      assert.equal(filesOpenUnder(dir), 1, "only the writer lock");
      await (await again.track(path(0), false))!.append({ payload: `{"i":0,"r":2}` });
      const entries = await (await again.track(path(0), false))!.backend.readAfter(undefined, 9);
      assert.equal(entries.length, 3);
    } finally {
      await again.close();
    }
  });
});
