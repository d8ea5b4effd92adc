// A funnel's history on an S3 ledger whose store let a late write replace an acknowledged batch
// (s3rver ignores If-None-Match, as the chaos campaign's S3 runs had it): reading forward fails
// with an error instead of skipping the lost records or ending there as if the track ended.
// The batches are written through the backend itself, the late one last, as the funnel writes
// them when a PUT that passed its deadline lands after the batch that re-took its sequence.
import assert from "node:assert/strict";
import { type LedgerEntry, loadS3Backend, type TrackPath } from "../../src/ledger/mod.ts";
import { startS3rver } from "../support/s3rver.ts";
import { startTestFunnel } from "./_http.ts";

const PATH: TrackPath = { broadcast: ["room", "1"], track: "chat" };

function entries(from: number, to: number): LedgerEntry[] {
  return Array.from({ length: to - from + 1 }, (_, i) => ({
    epoch: 1,
    seq: from + i,
    wallclock: BigInt(from + i + 1),
    payload: JSON.stringify({ n: from + i }),
  }));
}

Deno.test("history on S3 after a late write replaced a batch is an error, not a short history", async () => {
  const s3 = await startS3rver();
  try {
    const { S3Backend } = await loadS3Backend();
    const backend = await S3Backend.open(s3.backendOptions("late"));
    const track = (await backend.openTrack(PATH, true))!;
    await track.append(entries(0, 1));
    await track.append(entries(2, 9)); // acknowledged
    await track.append(entries(10, 14)); // acknowledged
    await track.append(entries(2, 3)); // the late PUT of an earlier attempt at sequence 2
    await backend.close();

    await using funnel = await startTestFunnel({
      LEDGER_URI: s3.ledgerUri("late"),
      AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    });
    for (const query of ["after=e000000-g00000000", "after=e000001-g00000003", ""]) {
      const r = await fetch(`${funnel.base}/tracks/room/1/chat?limit=200&${query}`);
      const text = await r.text();
      assert.ok(r.status >= 500, `${query}: ${r.status} ${text}`);
    }
  } finally {
    await s3.stop();
  }
});
