// TrackLedger rules that sit above every backend.
import assert from "node:assert/strict";
import {
  Ledger,
  type LedgerBackend,
  LedgerError,
  MemoryBackend,
  type TrackBackend,
  type TrackPath,
} from "../../src/ledger/mod.ts";

const PATH: TrackPath = { broadcast: ["r"], track: "t" };

/** A memory backend whose next `failErases` payload erasures fail as if the store were away. */
class FlakyErase implements LedgerBackend {
  readonly name = "flaky";
  readonly #inner = new MemoryBackend();
  failErases = 0;
  listTracks(): Promise<TrackPath[]> {
    return this.#inner.listTracks();
  }
  async openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined> {
    const track = await this.#inner.openTrack(path, create);
    if (!track) return undefined;
    return {
      append: (e) => track.append(e),
      latest: () => track.latest(),
      readBefore: (b, l) => track.readBefore(b, l),
      readAfter: (a, l) => track.readAfter(a, l),
      get: (s) => track.get(s),
      erasePayload: (s) => {
        if (this.failErases > 0) {
          this.failErases--;
          return Promise.reject(new LedgerError("unavailable", "store away"));
        }
        return track.erasePayload(s);
      },
      first: () => track.first(),
      trim: (b) => track.trim(b),
    };
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

Deno.test("a redaction whose erasure failed is completed by the retry, not committed twice", async () => {
  const backend = new FlakyErase();
  const ledger = new Ledger(backend);
  const track = (await ledger.track(PATH, true))!;
  const record = await track.append({ payload: `"secret"` });
  backend.failErases = 1;
  await assert.rejects(track.redact(record.seq, "mod"), { name: "LedgerError" });
  const retry = await track.redact(record.seq, "mod");
  assert.equal(retry.redaction?.seq, 1, "the retry answers with the first redaction");
  const all = await track.backend.readBefore(undefined, 10);
  assert.deepEqual(all.map((e) => e.seq), [1, 0], "exactly one redaction entry");
  assert.equal(all[1]?.payload, undefined);
  assert.equal(all[1]?.redacted, true);
  assert.deepEqual(await track.redact(record.seq, "mod"), { already: true });
  await ledger.close();
});
