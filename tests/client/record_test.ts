// Reading the funnel's JSON: commit times wider than a double stay exact,
// and a payload is never touched.
import assert from "node:assert/strict";
import { parseCommitted, parseHistoryPage, recordFromFrame } from "../../src/client/record.ts";
import { HttpError, NetworkError, parseTrackUrl } from "../../src/client/mod.ts";
import { retryable } from "../../src/client/errors.ts";
import { TokenKeeper, tokenLifetime } from "../../src/client/token.ts";

Deno.test("history pages keep 19-digit wallclocks exact and payloads as posted", () => {
  const text = `{"records":[` +
    `{"group":"e000001-g00000007","wallclock":1795362580261134591,"sender":"ann","payload":{"wallclock":1795362580261134591,"n":1}},` +
    `{"group":"e000001-g00000008","wallclock":1795362580261134593,"redacted":true},` +
    `{"group":"e000001-g00000009","wallclock":1795362580261134599,"sender":"mod","redacts":"e000001-g00000007"}` +
    `],"before":"e000001-g00000007"}`;
  const page = parseHistoryPage(text);
  assert.equal(page.before, "e000001-g00000007");
  assert.deepEqual(page.records.map((r) => r.seq), [7, 8, 9]);
  assert.deepEqual(page.records[0]!.record, {
    group: "e000001-g00000007",
    wallclock: 1795362580261134591n,
    sender: "ann",
    payload: { wallclock: 1795362580261134600, n: 1 }, // the payload is plain JSON, as posted
  });
  assert.deepEqual(page.records[1]!.record, {
    group: "e000001-g00000008",
    wallclock: 1795362580261134593n,
    redacted: true,
  });
  assert.equal(page.records[2]!.record.redacts, "e000001-g00000007");
  assert.deepEqual(
    parseCommitted('{"group":"e000001-g00000000","wallclock":1795362580261134591}'),
    {
      group: "e000001-g00000000",
      wallclock: 1795362580261134591n,
    },
  );
  assert.throws(() => parseHistoryPage('{"records":[{"wallclock":1}]}'), SyntaxError);
});

Deno.test("live frames become records of their group; unreadable frames are refused", () => {
  const enc = new TextEncoder();
  const p = recordFromFrame(1, 41, enc.encode('{"sender":"ann","payload":[1,2]}'), undefined);
  assert.deepEqual(p.record, { group: "e000001-g00000041", sender: "ann", payload: [1, 2] });
  const r = recordFromFrame(1, 42, enc.encode('{"redacts":"e000001-g00000041"}'), 5n);
  assert.deepEqual(r.record, {
    group: "e000001-g00000042",
    redacts: "e000001-g00000041",
    wallclock: 5n,
  });
  assert.throws(() => recordFromFrame(1, 1, enc.encode("[1]"), undefined), SyntaxError);
  assert.throws(() => recordFromFrame(1, 1, enc.encode('{"sender":"x"}'), undefined), SyntaxError);
  assert.throws(() => recordFromFrame(1, 1, enc.encode("{"), undefined), SyntaxError);
});

Deno.test("track URLs name the broadcast and the track; anything else is a TypeError", () => {
  const t = parseTrackUrl("https://example.com/api/tracks/room/a%20b/chat?x=1");
  assert.equal(t.url.href, "https://example.com/api/tracks/room/a%20b/chat");
  assert.deepEqual([t.broadcast, t.name], ["room/a b", "chat"]);
  assert.throws(() => parseTrackUrl("http://h/tracks/chat"), TypeError);
  assert.throws(() => parseTrackUrl("ftp://h/tracks/a/b"), TypeError);
  assert.throws(() => parseTrackUrl("not a url"), TypeError);
});

Deno.test("a token function is asked again a quarter of the lifetime before expiry", async () => {
  const jwt = (iat: number, exp: number) =>
    `h.${btoa(JSON.stringify({ iat, exp })).replace(/=+$/, "")}.s`;
  assert.deepEqual(tokenLifetime(jwt(100, 140)), { issuedAt: 100_000, expiresAt: 140_000 });
  assert.equal(tokenLifetime("opaque"), undefined);
  let now = 100_000;
  let calls = 0;
  const keeper = new TokenKeeper(() => {
    calls++;
    return jwt(now / 1000, now / 1000 + 40);
  }, () => now);
  const first = await keeper.get();
  assert.equal(keeper.renewAt, 130_000);
  now = 129_999;
  assert.equal(await keeper.get(), first);
  assert.equal(calls, 1);
  now = 130_000;
  assert.notEqual(await keeper.get(), first);
  assert.equal(calls, 2);
  assert.equal(keeper.renewAt, 160_000);
  assert.equal(await new TokenKeeper("fixed").get(), "fixed");
});

Deno.test("a redacted record's frame (as FETCH answers it) is a redacted record", () => {
  const enc = new TextEncoder();
  const p = recordFromFrame(1, 7, enc.encode('{"redacted":true}'), 9n);
  assert.deepEqual(p.record, { group: "e000001-g00000007", redacted: true, wallclock: 9n });
});

Deno.test("only failures that got no answer are retried, not every TypeError", () => {
  assert.equal(retryable(new NetworkError("offline")), true);
  assert.equal(retryable(new TypeError("a bug in the application")), false);
  assert.equal(retryable(new HttpError(503, "busy")), true);
  assert.equal(retryable(new HttpError(403, "no")), false);
});
