// Seals and commit gates on every backend. A sealed track refuses records (redactions pass),
// refused drafts take no number, and the seal survives reopening the ledger; a draft that lifts
// it opens the track again. A commit gate decides each draft of its batch against every entry
// committed before it, also those committed without the gate and, on PostgreSQL, by another
// ledger on the same table (another funnel process).
import assert from "node:assert/strict";
import {
  type CommitGate,
  CommitRefused,
  type EntryDraft,
  Ledger,
  type LedgerEntry,
  type TrackPath,
} from "../../src/ledger/mod.ts";
import { ignoreWithout } from "../support/requires.ts";
import { type BackendInstance, HARNESSES } from "./_backends.ts";

const TRACK: TrackPath = { broadcast: ["sealed"], track: "stream" };

/** The reason a commit was refused, or "stored". */
async function outcome(committing: Promise<unknown>): Promise<string> {
  try {
    await committing;
    return "stored";
  } catch (error) {
    if (!(error instanceof CommitRefused)) throw error;
    return error.seal !== undefined ? `sealed: ${error.seal}` : `refused: ${error.reason}`;
  }
}

/**
 * A gate that refuses a draft whose metadata it has seen committed before (an idempotency rule
 * of its own). Gates are handed stored entries possibly without payloads: they read metadata.
 */
class OncePerMeta implements CommitGate {
  seen = -1;
  readonly committed = new Set<string>();
  /** How many entries it was handed from storage. */
  learned = 0;

  open(stored: readonly LedgerEntry[]): (draft: EntryDraft, seq: number) => unknown {
    this.learned += stored.length;
    this.stored(stored);
    const scratch = new Set<string>();
    return (draft) => {
      const meta = draft.meta ?? "";
      if (this.committed.has(meta) || scratch.has(meta)) return `${meta} again`;
      scratch.add(meta);
      return undefined;
    };
  }

  stored(entries: readonly LedgerEntry[]): void {
    for (const e of entries) {
      if (e.seq <= this.seen) continue;
      this.seen = e.seq;
      if (e.meta !== undefined) this.committed.add(e.meta);
    }
  }
}

function backendTest(
  name: string,
  body: (instance: BackendInstance, harness: string) => Promise<void>,
): void {
  for (const harness of HARNESSES) {
    const needs = harness.needs;
    Deno.test({
      name: `ledger ${harness.name}: ${name}`,
      ignore: needs ? ignoreWithout(needs.service, needs.missing) : false,
      async fn() {
        const instance = await harness.setup();
        try {
          await body(instance, harness.name);
        } finally {
          await instance.cleanup();
        }
      },
    });
  }
}

backendTest(
  "a sealed track refuses records until a gated draft lifts the seal",
  async (instance) => {
    const gate = new OncePerMeta();
    const first = new Ledger(await instance.open());
    const track = (await first.track(TRACK, true))!;
    await track.append({ payload: `"a"` });
    // One batch: a record, the sealing draft, a record after it.
    const results = await Promise.all([
      outcome(track.commit({ payload: `"b"` }, gate)),
      outcome(track.commit({ payload: `"c"`, seal: "closed for the test" }, gate)),
    ]);
    assert.deepEqual(results, ["stored", "stored"]);
    assert.equal(await outcome(track.append({ payload: `"d"` })), "sealed: closed for the test");
    const redaction = await track.redact(0, undefined);
    assert.ok(redaction.redaction, "a redaction passes the seal");
    await first.close();

    // Reopened (a restarted process): still sealed, and refused drafts took no number.
    const second = new Ledger(await instance.open());
    try {
      const again = (await second.track(TRACK, false))!;
      assert.equal(await outcome(again.append({ payload: `"e"` })), "sealed: closed for the test");
      const stored = await again.backend.readAfter(undefined, 10);
      assert.deepEqual(stored.map((e) => e.seq), [0, 1, 2, 3]);
      assert.deepEqual(stored.map((e) => e.seal), [
        undefined,
        undefined,
        "closed for the test",
        undefined,
      ]);
      // The gate lifts the seal; plain records are taken again.
      const lifted = new OncePerMeta();
      assert.equal(await outcome(again.commit({ payload: `"f"`, seal: "" }, lifted)), "stored");
      assert.equal(lifted.learned, 4, "the gate was handed the entries it had not seen");
      assert.equal(await outcome(again.append({ payload: `"g"` })), "stored");
      assert.equal(again.newest?.seq, 5);
    } finally {
      await second.close();
    }
  },
);

backendTest("a commit gate decides against every entry committed before", async (
  instance,
  harness,
) => {
  const gate = new OncePerMeta();
  const ledger = new Ledger(await instance.open());
  // PostgreSQL is shared: a second ledger on the same table is another funnel process.
  const other = harness === "postgres" ? new Ledger(await instance.open()) : undefined;
  try {
    const track = (await ledger.track(TRACK, true))!;
    await track.append({ meta: `"x"` });
    const batch = await Promise.all([
      outcome(track.commit({ meta: `"x"` }, gate)),
      outcome(track.commit({ meta: `"y"` }, gate)),
      outcome(track.commit({ meta: `"y"` }, gate)),
    ]);
    assert.deepEqual(batch, ['refused: "x" again', "stored", 'refused: "y" again']);
    if (other) {
      const elsewhere = (await other.track(TRACK, false))!;
      await elsewhere.append({ meta: `"z"` });
      // This ledger has not necessarily heard of "z": the gate reads it inside the commit.
      assert.equal(await outcome(track.commit({ meta: `"z"` }, gate)), 'refused: "z" again');
    }
    assert.equal(await outcome(track.commit({ meta: `"w"` }, gate)), "stored");
    const all = await track.backend.readAfter(undefined, 10);
    assert.deepEqual(
      all.map((e) => e.meta),
      other ? [`"x"`, `"y"`, `"z"`, `"w"`] : [`"x"`, `"y"`, `"w"`],
    );
    assert.equal(gate.seen, all[all.length - 1]!.seq);
  } finally {
    await other?.close();
    await ledger.close();
  }
});
