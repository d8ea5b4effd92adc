// post and redact against a real funnel: a retry after a lost answer
// stores nothing twice, a 429 is waited out, refusals are HttpErrors.
import assert from "node:assert/strict";
import { HttpError, post, redact } from "../../src/client/mod.ts";
import { startLiveFunnel } from "../support/live_funnel.ts";
import { ledgerEntries } from "./_feed.ts";

Deno.test("post: an answer lost after the commit is retried with the same key and stored once", async () => {
  await using f = await startLiveFunnel();
  const track = `${f.base}/tracks/room/1/retry`;
  const keys: (string | null)[] = [];
  let calls = 0;
  // The real funnel answers every request; the first answer never reaches the caller.
  const losing: typeof fetch = async (input, init) => {
    keys.push(new Headers(init?.headers).get("idempotency-key"));
    const response = await fetch(input, init);
    if (calls++ === 0) {
      await response.body?.cancel();
      throw new TypeError("connection reset");
    }
    return response;
  };
  const committed = await post(track, { text: "once" }, { fetch: losing });
  assert.equal(calls, 2);
  assert.equal(keys.length, 2);
  assert.ok(keys[0] && keys[0] === keys[1], "both attempts carry one generated key");
  const ledger = await ledgerEntries(track);
  assert.deepEqual(ledger.map((e) => [e.group, e.payload]), [[committed.group, { text: "once" }]]);
  assert.equal(typeof committed.wallclock, "bigint");
});

// At the shipped request timeout (10 s): a funnel that commits but never answers is abandoned at
// the timeout, and the retry with the same key is answered with the record stored once.
Deno.test("post: an answer that never comes is abandoned at the request timeout and retried, stored once", async () => {
  await using f = await startLiveFunnel();
  const track = `${f.base}/tracks/room/1/hang`;
  let calls = 0;
  let abandonedAfter = 0;
  // The real funnel commits the first request; its answer is held until the caller gives up.
  const hanging: typeof fetch = async (input, init) => {
    if (calls++ > 0) return fetch(input, init);
    const started = performance.now();
    const response = await fetch(input, { ...init, signal: null });
    await response.body?.cancel();
    await new Promise<void>((resolve) => init!.signal!.addEventListener("abort", () => resolve()));
    abandonedAfter = performance.now() - started;
    throw init!.signal!.reason; // as fetch rejects when its signal aborts
  };
  const committed = await post(track, { text: "once" }, { fetch: hanging });
  assert.equal(calls, 2);
  assert.ok(abandonedAfter >= 9_900, `abandoned at the 10 s timeout (${abandonedAfter} ms)`);
  const ledger = await ledgerEntries(track);
  assert.deepEqual(ledger.map((e) => [e.group, e.payload]), [[committed.group, { text: "once" }]]);
});

Deno.test("post: 429 is retried after its Retry-After; a refusal throws HttpError at once", async () => {
  await using f = await startLiveFunnel({ FUNNEL_TRACK_LIMIT: "1,1" });
  const track = `${f.base}/tracks/room/1/limited`;
  await post(track, 1);
  const started = Date.now();
  const second = await post(track, 2);
  assert.ok(Date.now() - started >= 900, "waited for the bucket to refill");
  assert.match(second.group, /^e000001-g00000001$/);
  await assert.rejects(post(track, 3, { attempts: 1 }), (err) => {
    assert.ok(err instanceof HttpError);
    assert.equal(err.status, 429);
    return true;
  });
  await assert.rejects(redact(track, "e000001-g00000099"), (err) => {
    assert.ok(err instanceof HttpError);
    assert.equal(err.status, 404);
    assert.match(err.detail ?? "", /e000001-g00000099/);
    return true;
  });
  await assert.rejects(post(track, undefined), TypeError);
});
