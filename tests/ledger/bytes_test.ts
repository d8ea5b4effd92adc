// Byte payloads and protocol metadata on every backend: stored as bytes (no
// base64 in storage), read back exactly after a reopen, erased by redaction,
// and JSON records next to them unchanged.
import assert from "node:assert/strict";
import { decodeBatch, encodeBatch } from "../../src/ledger/codec.ts";
import { entryFrame, Ledger, type LedgerEntry, type TrackPath } from "../../src/ledger/mod.ts";
import { ignoreWithout } from "../support/requires.ts";
import { HARNESSES } from "./_backends.ts";

const TRACK: TrackPath = { broadcast: ["bytes"], track: "stream" };
const MARK = "raw-bytes-marker-7f3a";
const BYTES = new Uint8Array([0, 255, 1, 254, ...new TextEncoder().encode(MARK), 0x80, 0]);
const META = `{"create":{"type":"application/octet-stream"}}`;

for (const harness of HARNESSES) {
  const needs = harness.needs;
  Deno.test({
    name: `ledger ${harness.name}: byte payloads and metadata are stored as they are`,
    ignore: needs ? ignoreWithout(needs.service, needs.missing) : false,
    async fn() {
      const instance = await harness.setup();
      try {
        const first = new Ledger(await instance.open());
        const track = (await first.track(TRACK, true))!;
        await track.append({ bytes: BYTES, meta: META });
        await track.append({ payload: `{"json":true}` });
        await Promise.all([
          track.append({ bytes: new Uint8Array(0) }),
          track.append({ bytes: BYTES.subarray(2, 5), meta: `{"n":1}` }),
          track.append({ meta: `{"closed":true}` }),
        ]);
        await first.close();

        // Files and objects hold the bytes themselves; memory keeps objects and PostgreSQL bytea.
        const raw = harness.name.startsWith("directory") || harness.name === "s3";
        if (raw) assert.ok(await instance.rawContains(MARK), "the bytes are stored raw");
        assert.ok(!(await instance.rawContains(BYTES.toBase64().slice(8, 24))), "not as base64");

        const again = new Ledger(await instance.open());
        try {
          const reopened = (await again.track(TRACK, false))!;
          const all = await reopened.backend.readAfter(undefined, 10);
          assert.deepEqual(all.map((e) => e.bytes), [
            BYTES,
            undefined,
            new Uint8Array(0),
            BYTES.subarray(2, 5),
            undefined,
          ]);
          assert.deepEqual(all.map((e) => e.meta), [
            META,
            undefined,
            undefined,
            `{"n":1}`,
            `{"closed":true}`,
          ]);
          assert.equal(all[1]!.payload, `{"json":true}`);
          assert.deepEqual((await reopened.backend.get(0))?.bytes, BYTES);
          await reopened.redact(0, undefined);
          const redacted = await reopened.backend.get(0);
          assert.equal(redacted?.bytes, undefined);
          assert.equal(redacted?.redacted, true);
          assert.equal(redacted?.meta, META, "redaction keeps the metadata");
        } finally {
          await again.close();
        }
        if (raw) assert.ok(!(await instance.rawContains(MARK)), "redaction erased the bytes");
      } finally {
        await instance.cleanup();
      }
    },
  });
}

Deno.test("codec: a batch without bytes keeps its plain JSON form", () => {
  const entry: LedgerEntry = { epoch: 1, seq: 3, wallclock: 5n, payload: `{"a":1}` };
  const encoded = encodeBatch([entry]);
  assert.equal(new TextDecoder().decode(encoded), `[{"e":1,"s":3,"w":"5","p":"{\\"a\\":1}"}]`);
  assert.deepEqual(decodeBatch(encoded), [entry]);
});

Deno.test("codec: byte payloads follow the JSON text and decode exactly", () => {
  const entries: LedgerEntry[] = [
    { epoch: 1, seq: 0, wallclock: 1n, bytes: BYTES, meta: META },
    { epoch: 1, seq: 1, wallclock: 1n, payload: "[1]" },
    { epoch: 1, seq: 2, wallclock: 1n, bytes: new Uint8Array([9]) },
  ];
  const encoded = encodeBatch(entries);
  assert.equal(encoded[0], 0x01);
  assert.deepEqual(decodeBatch(encoded), entries);
  assert.throws(
    () => decodeBatch(encoded.subarray(0, encoded.length - 1)),
    /missing byte payloads/,
  );
  assert.throws(() => decodeBatch(new Uint8Array([...encoded, 0])), /bytes past its payloads/);
});

Deno.test("frames: bytes travel as base64, metadata verbatim, old frames unchanged", () => {
  const base = { epoch: 1, seq: 0, wallclock: 1n };
  assert.equal(entryFrame({ ...base, payload: "{}" }), `{"payload":{}}`);
  assert.equal(entryFrame({ ...base }), `{"redacted":true}`);
  assert.equal(
    entryFrame({ ...base, sender: "a", bytes: new Uint8Array([1, 2]), meta: `{"n":1}` }),
    `{"sender":"a","bytes":"AQI=","meta":{"n":1}}`,
  );
  assert.equal(entryFrame({ ...base, meta: `{"closed":true}` }), `{"meta":{"closed":true}}`);
});
