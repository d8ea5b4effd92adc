import assert from "node:assert/strict";
import { call, rawRequest, startTestFunnel } from "./_http.ts";

const TRACK = "/tracks/room/1/chat";

function assertProblem(reply: { status: number; headers: Headers; json: unknown }, status: number) {
  assert.equal(reply.status, status);
  assert.equal(reply.headers.get("content-type"), "application/problem+json");
  const body = reply.json as Record<string, unknown>;
  assert.equal(body.status, status);
  assert.equal(typeof body.title, "string");
  assert.equal(typeof body.type, "string");
  assert.ok(typeof body.detail === "string" && body.detail.length > 0);
}

Deno.test("POST commits records with consecutive groups and exact nanosecond wallclocks", async () => {
  await using t = await startTestFunnel();
  const first = await call(t.base, "POST", TRACK, { body: '{"text":"hi"}' });
  assert.equal(first.status, 201);
  assert.equal(first.json.group, "e000001-g00000000");
  const wallclock = /"wallclock":(\d+)/.exec(first.text)?.[1];
  assert.ok(wallclock && wallclock.length >= 19, `wallclock ${wallclock} is in nanoseconds`);
  const second = await call(t.base, "POST", TRACK, { body: "[1, 2]" });
  assert.equal(second.json.group, "e000001-g00000001");
  assert.ok(BigInt(/"wallclock":(\d+)/.exec(second.text)![1]!) >= BigInt(wallclock));
  const history = await call(t.base, "GET", TRACK);
  assert.equal(history.status, 200);
  assert.deepEqual(history.json.records.map((r: { payload: unknown }) => r.payload), [
    { text: "hi" },
    [1, 2],
  ]);
  assert.ok(history.text.includes(`"wallclock":${wallclock}`), "wallclock is served exactly");
  assert.equal(history.json.before, undefined, "no older page exists");
});

Deno.test("POST refuses bodies that are not exactly one UTF-8 JSON value", async () => {
  await using t = await startTestFunnel();
  for (const body of ["", "   ", '{"a":1} {"b":2}', "{oops", "'single'"]) {
    assertProblem(await call(t.base, "POST", TRACK, { body }), 400);
  }
  const badUtf8 = new Uint8Array([0x22, 0xff, 0xfe, 0x22]);
  assertProblem(await call(t.base, "POST", TRACK, { body: badUtf8 }), 400);
  const history = await call(t.base, "GET", TRACK);
  assert.equal(history.status, 404, "nothing was stored, so the track was never created");
});

Deno.test("POST stores short and long, ASCII and non-ASCII bodies exactly as sent", async () => {
  await using t = await startTestFunnel();
  const bodies = [
    '{"t":"plain ascii"}',
    '{"t":"caf\\u00e9 é 👍"}',
    JSON.stringify({ t: "a".repeat(2000) }),
    JSON.stringify({ t: "ü".repeat(2000) }),
    '"\\u0000 escaped control"',
  ];
  for (const body of bodies) {
    assert.equal((await call(t.base, "POST", TRACK, { body })).status, 201);
  }
  // Invalid UTF-8 is refused on both decoding paths (short, and past 512 bytes).
  for (const size of [4, 2000]) {
    const bytes = new Uint8Array(size).fill(0x61);
    bytes[0] = 0x22;
    bytes[size - 1] = 0x22;
    bytes[size >> 1] = 0xc3; // a lead byte with no continuation
    assertProblem(await call(t.base, "POST", TRACK, { body: bytes }), 400);
  }
  const history = await call(t.base, "GET", TRACK);
  const raw = history.text;
  for (const body of bodies) {
    assert.ok(raw.includes(`"payload":${body}`), `stored verbatim: ${body.slice(0, 30)}`);
  }
  assert.equal(history.json.records.length, bodies.length);
});

Deno.test("POST accepts 64 KiB and answers 413 above it", async () => {
  await using t = await startTestFunnel();
  const exact = JSON.stringify("x".repeat(64 * 1024 - 2));
  assert.equal(new TextEncoder().encode(exact).length, 64 * 1024);
  assert.equal((await call(t.base, "POST", TRACK, { body: exact })).status, 201);
  const over = JSON.stringify("x".repeat(64 * 1024 - 1));
  assertProblem(await call(t.base, "POST", TRACK, { body: over }), 413);
  // Chunked, without Content-Length, is counted as it streams.
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('"' + "y".repeat(40_000)));
      controller.enqueue(new TextEncoder().encode("y".repeat(40_000) + '"'));
      controller.close();
    },
  });
  assertProblem(await call(t.base, "POST", TRACK, { body: stream }), 413);
});

Deno.test("GET pages through history newest first, each page oldest first", async () => {
  await using t = await startTestFunnel();
  for (let i = 0; i < 120; i++) {
    assert.equal((await call(t.base, "POST", TRACK, { body: String(i) })).status, 201);
  }
  const firstPage = await call(t.base, "GET", TRACK);
  assert.equal(firstPage.json.records.length, 50, "default limit is 50");
  assert.deepEqual(firstPage.json.records.map((r: { payload: number }) => r.payload).slice(0, 2), [
    70,
    71,
  ]);
  const seen: number[] = [];
  let before: string | undefined;
  let pages = 0;
  do {
    const query = before ? `?limit=40&before=${before}` : "?limit=40";
    const page = await call(t.base, "GET", TRACK + query);
    assert.equal(page.status, 200);
    seen.unshift(...page.json.records.map((r: { payload: number }) => r.payload));
    before = page.json.before;
    pages++;
  } while (before !== undefined);
  assert.equal(pages, 3);
  assert.deepEqual(seen, Array.from({ length: 120 }, (_, i) => i));
  const max = await call(t.base, "GET", TRACK + "?limit=200");
  assert.equal(max.json.records.length, 120);
  const unpadded = await call(t.base, "GET", TRACK + "?before=e1-g2");
  assert.deepEqual(unpadded.json.records.map((r: { payload: number }) => r.payload), [0, 1]);
  for (const bad of ["?limit=0", "?limit=201", "?limit=ten", "?limit=1.5", "?before=g12"]) {
    assertProblem(await call(t.base, "GET", TRACK + bad), 400);
  }
  assertProblem(await call(t.base, "GET", "/tracks/room/1/none"), 404);
});

Deno.test("GET with after pages forward, oldest first, with an after cursor while newer exist", async () => {
  await using t = await startTestFunnel();
  for (let i = 0; i < 95; i++) {
    assert.equal((await call(t.base, "POST", TRACK, { body: String(i) })).status, 201);
  }
  const payloads = (page: { json: { records: { payload: number }[] } }) =>
    page.json.records.map((r) => r.payload);
  const first = await call(t.base, "GET", TRACK + "?after=e000001-g00000004&limit=10");
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("content-type"), "application/json");
  assert.deepEqual(payloads(first), [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
  assert.equal(first.json.after, "e000001-g00000014", "the cursor is the page's newest group");
  assert.equal(first.json.before, undefined, "a forward page has no before cursor");
  // A whole catch-up from the first record: every record once, in commit order.
  // e000000-g00000000 lies before the first epoch: paging after it starts at the first record.
  const seen: number[] = [];
  let after: string | undefined = "e000000-g00000000";
  while (after !== undefined) {
    const page = await call(t.base, "GET", `${TRACK}?limit=40&after=${after}`);
    assert.equal(page.status, 200);
    seen.push(...payloads(page));
    after = page.json.after;
  }
  assert.deepEqual(seen, Array.from({ length: 95 }, (_, i) => i));
  // The page that reaches the newest record has no cursor, even when it is full.
  const last = await call(t.base, "GET", TRACK + "?after=e1-g84&limit=10");
  assert.deepEqual(payloads(last), [85, 86, 87, 88, 89, 90, 91, 92, 93, 94]);
  assert.equal(last.json.after, undefined);
  // Nothing newer: an empty page without a cursor; a new record then shows up after it.
  const none = await call(t.base, "GET", TRACK + "?after=e000001-g00000094");
  assert.deepEqual(none.json, { records: [] });
  assert.equal((await call(t.base, "POST", TRACK, { body: "95" })).status, 201);
  const next = await call(t.base, "GET", TRACK + "?after=e000001-g00000094");
  assert.deepEqual(payloads(next), [95]);
  assert.deepEqual((await call(t.base, "GET", TRACK + "?after=e2-g0")).json, { records: [] });
  // Redacted records and redactions read forward as they do backward.
  await call(t.base, "DELETE", TRACK + "?group=e000001-g00000003");
  const redacted = await call(t.base, "GET", TRACK + "?after=e1-g2&limit=1");
  assert.deepEqual(redacted.json.records[0], {
    group: "e000001-g00000003",
    wallclock: redacted.json.records[0].wallclock,
    redacted: true,
  });
  const tail = await call(t.base, "GET", TRACK + "?after=e1-g95");
  assert.equal(tail.json.records[0].redacts, "e000001-g00000003");
});

Deno.test("GET refuses after together with before, and a malformed after, with problem+json", async () => {
  await using t = await startTestFunnel();
  assert.equal((await call(t.base, "POST", TRACK, { body: "1" })).status, 201);
  const both = await call(t.base, "GET", TRACK + "?after=e1-g0&before=e1-g5");
  assertProblem(both, 400);
  assert.match(both.json.detail, /either before .* or after .*, not both/);
  for (const bad of ["?after=g12", "?after=", "?after=e0-g1", "?after=e1-g0&limit=0"]) {
    // e0-g1 is not the start cursor (only e0-g0 is) and epoch 0 holds no records.
    assertProblem(await call(t.base, "GET", TRACK + bad), 400);
  }
  const malformed = await call(t.base, "GET", TRACK + "?after=yesterday");
  assert.match(malformed.json.detail, /^after: Cannot parse group "yesterday"/);
  assertProblem(await call(t.base, "GET", "/tracks/room/1/none?after=e1-g0"), 404);
});

Deno.test("PUT creates a track (201) once, then answers 204", async () => {
  await using t = await startTestFunnel();
  const created = await call(t.base, "PUT", "/tracks/live/feed");
  assert.equal(created.status, 201);
  assert.equal(created.text, "");
  assert.equal((await call(t.base, "PUT", "/tracks/live/feed")).status, 204);
  const empty = await call(t.base, "GET", "/tracks/live/feed");
  assert.deepEqual(empty.json, { records: [] });
  assert.equal((await call(t.base, "POST", "/tracks/live/feed", { body: "1" })).status, 201);
  assert.equal((await call(t.base, "PUT", "/tracks/live/feed")).status, 204);
});

Deno.test("DELETE redacts once (201), then 204; validates the group", async () => {
  await using t = await startTestFunnel();
  await call(t.base, "POST", TRACK, { body: '{"secret":1}' });
  await call(t.base, "POST", TRACK, { body: '{"keep":2}' });
  assertProblem(await call(t.base, "DELETE", TRACK), 400);
  assertProblem(await call(t.base, "DELETE", TRACK + "?group=zzz"), 400);
  assertProblem(await call(t.base, "DELETE", "/tracks/room/1/other?group=e1-g0"), 404);
  assertProblem(await call(t.base, "DELETE", TRACK + "?group=e000001-g00000099"), 404);

  const redacted = await call(t.base, "DELETE", TRACK + "?group=e000001-g00000000");
  assert.equal(redacted.status, 201);
  assert.equal(redacted.json.group, "e000001-g00000002");
  assert.equal(typeof redacted.json.wallclock, "number");
  const again = await call(t.base, "DELETE", TRACK + "?group=e1-g0");
  assert.equal(again.status, 204);
  assertProblem(await call(t.base, "DELETE", TRACK + "?group=e000001-g00000002"), 400);

  const history = await call(t.base, "GET", TRACK);
  const [gone, kept, redaction] = history.json.records;
  assert.deepEqual(Object.keys(gone).sort(), ["group", "redacted", "wallclock"]);
  assert.equal(gone.redacted, true);
  assert.ok(!history.text.includes("secret"), "the payload is gone from history");
  assert.deepEqual(kept.payload, { keep: 2 });
  assert.equal(redaction.redacts, "e000001-g00000000");
  assert.equal(redaction.payload, undefined);
});

Deno.test("Idempotency-Key: a retry gets the first answer and stores nothing", async () => {
  await using t = await startTestFunnel();
  const headers = { "idempotency-key": "order-17" };
  const first = await call(t.base, "POST", TRACK, { body: '"a"', headers });
  const retry = await call(t.base, "POST", TRACK, { body: '"a"', headers });
  assert.equal(retry.status, 201);
  assert.equal(retry.text, first.text);
  const concurrent = await Promise.all(
    [1, 2, 3].map(() =>
      call(t.base, "POST", TRACK, { body: '"b"', headers: { "idempotency-key": "order-18" } })
    ),
  );
  assert.equal(new Set(concurrent.map((r) => r.text)).size, 1, "concurrent retries agree");
  const other = await call(t.base, "POST", "/tracks/room/2/chat", { body: '"a"', headers });
  assert.equal(other.json.group, "e000001-g00000000", "keys are scoped per track");
  const history = await call(t.base, "GET", TRACK);
  assert.deepEqual(history.json.records.map((r: { payload: string }) => r.payload), ["a", "b"]);
  for (const key of ["x".repeat(256), "has space", "tab\tkey", "naïve"]) {
    assertProblem(
      await call(t.base, "POST", TRACK, { body: "1", headers: { "idempotency-key": key } }),
      400,
    );
  }
});

Deno.test("Idempotency remembers the 1024 most recent keys per track", async () => {
  await using t = await startTestFunnel();
  for (let i = 0; i <= 1024; i++) {
    await call(t.base, "POST", TRACK, { body: "0", headers: { "idempotency-key": `k${i}` } });
  }
  const recent = await call(t.base, "POST", TRACK, {
    body: "0",
    headers: { "idempotency-key": "k1024" },
  });
  assert.equal(recent.json.group, "e000001-g00001024", "a recent key is replayed");
  const forgotten = await call(t.base, "POST", TRACK, {
    body: "0",
    headers: { "idempotency-key": "k0" },
  });
  assert.equal(forgotten.json.group, "e000001-g00001025", "the oldest key was forgotten");
});

Deno.test("Sender and track limits answer 429 with Retry-After and refill with time", async () => {
  await using t = await startTestFunnel({ FUNNEL_SENDER_LIMIT: "1,2", FUNNEL_TRACK_LIMIT: "2,3" });
  assert.equal((await call(t.base, "POST", TRACK, { body: "1" })).status, 201);
  assert.equal((await call(t.base, "POST", TRACK, { body: "2" })).status, 201);
  const limited = await call(t.base, "POST", TRACK, { body: "3" });
  assertProblem(limited, 429);
  assert.equal(limited.headers.get("retry-after"), "1");
  // Another track is not limited by this one.
  assert.equal((await call(t.base, "POST", "/tracks/room/1/other", { body: "1" })).status, 201);
  t.clock.now += 1000;
  assert.equal((await call(t.base, "POST", TRACK, { body: "4" })).status, 201);
  const history = await call(t.base, "GET", TRACK);
  assert.equal(history.json.records.length, 3, "the refused record was not stored");
});

Deno.test("Retry-After covers the wait for a slow rate", async () => {
  await using t = await startTestFunnel({ FUNNEL_TRACK_LIMIT: "0.2,1" });
  assert.equal((await call(t.base, "POST", TRACK, { body: "1" })).status, 201);
  const limited = await call(t.base, "POST", TRACK, { body: "2" });
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get("retry-after"), "5");
  t.clock.now += 4000;
  assert.equal((await call(t.base, "POST", TRACK, { body: "2" })).status, 429);
  t.clock.now += 1000;
  assert.equal((await call(t.base, "POST", TRACK, { body: "2" })).status, 201);
});

Deno.test("Hostile track paths are refused with 400 and never stored", async () => {
  await using t = await startTestFunnel();
  const port = t.funnel.addr.port;
  const hostile = [
    "/tracks/a/../b",
    "/tracks/a/%2e%2e/b",
    "/tracks/a/%2E%2E/b/c",
    "/tracks/a/./b",
    "/tracks/a%2Fb/c",
    "/tracks/a%2fb",
    "/tracks/a//b",
    "/tracks/a/b/",
    "/tracks/a/%00/b",
    "/tracks/a/%0a/b",
    "/tracks/a/%5c/b",
    "/tracks/onlyone",
    "/tracks/a/%zz",
    `/tracks/a/${"x".repeat(1100)}`,
  ];
  for (const path of hostile) {
    assert.equal(await rawRequest(port, `POST ${path} HTTP/1.1`), 400, path);
  }
  for (const path of hostile.slice(0, 3)) {
    assert.equal(await rawRequest(port, `GET ${path} HTTP/1.1`), 400, path);
  }
  const ok = await call(t.base, "POST", "/tracks/caf%C3%A9/r%C3%A9sum%C3%A9%20x", { body: "1" });
  assert.equal(ok.status, 201, "percent-encoded unicode and spaces are fine");
  const tracks = await t.funnel.ledger.tracks();
  assert.deepEqual(tracks, [{ broadcast: ["café"], track: "résumé x" }]);
});

Deno.test("Unknown endpoints are 404 and other methods 405, as problem+json", async () => {
  await using t = await startTestFunnel();
  assertProblem(await call(t.base, "GET", "/nope"), 404);
  const patch = await call(t.base, "PATCH", TRACK, { body: "1" });
  assertProblem(patch, 405);
  assert.equal(patch.headers.get("allow"), "GET, POST, PUT, DELETE");
  const health = await call(t.base, "GET", "/health");
  assert.equal(health.status, 200);
  assert.equal(health.json.status, "ok");
});

Deno.test("CORS: listed origins get headers and preflights; others do not", async () => {
  await using t = await startTestFunnel({ CORS_ALLOWED_ORIGINS: "https://app.example" });
  const preflight = await call(t.base, "OPTIONS", TRACK, {
    headers: {
      origin: "https://app.example",
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, idempotency-key",
    },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get("access-control-allow-origin"), "https://app.example");
  assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /idempotency-key/);
  const post = await call(t.base, "POST", TRACK, {
    body: "1",
    headers: { origin: "https://app.example" },
  });
  assert.equal(post.headers.get("access-control-allow-origin"), "https://app.example");
  const foreign = await call(t.base, "OPTIONS", TRACK, {
    headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
  });
  assert.equal(foreign.status, 403);
  assert.equal(foreign.headers.get("access-control-allow-origin"), null);
});

Deno.test("CORS: unset means same-origin only", async () => {
  await using t = await startTestFunnel();
  const post = await call(t.base, "POST", TRACK, {
    body: "1",
    headers: { origin: "https://app.example" },
  });
  assert.equal(post.status, 201);
  assert.equal(post.headers.get("access-control-allow-origin"), null);
});
