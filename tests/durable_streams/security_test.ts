// Hostile requests on /v1/stream/, each answered without leaking, crashing or
// serving active content: a fork reaching outside its credential's read scope,
// a Stream-Forked-From that is no URL, a Host header steering Location, and a
// stream created as text/html.
import assert from "node:assert/strict";
import { keySetText, makeKey, signWith } from "../support/credentials.ts";
import { quiet } from "../support/quiet.ts";
import { startLiveFunnel } from "../support/live_funnel.ts";

async function call(
  url: string,
  method: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

Deno.test("Auth on: a fork needs fetch on its source; a post,fetch:mine/** credential cannot fork a stream it may not read", async () => {
  using _q = quiet();
  const key = await makeKey();
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/keys.json`, keySetText(key));
  await using f = await startLiveFunnel({ SLUICE_AUTH_KEYS: `${dir}/keys.json` });
  const now = Math.floor(Date.now() / 1000);
  const token = (scopes: { actions: string[]; prefix: string }[]) =>
    signWith(key, {
      sub: "alice",
      scopes: scopes.map((s) => ({ actions: s.actions, broadcast: { prefix: s.prefix } })),
      iat: now,
      nbf: now,
      exp: now + 600,
    });
  const owner = `Bearer ${await token([{ actions: ["post", "fetch"], prefix: "room" }])}`;
  const mine = `Bearer ${await token([{ actions: ["post", "fetch"], prefix: "mine" }])}`;
  const both = `Bearer ${await token([
    { actions: ["post", "fetch"], prefix: "mine" },
    { actions: ["fetch"], prefix: "room" },
  ])}`;
  const secret = `${f.base}/v1/stream/room/1/secret`;
  try {
    const text = { "content-type": "text/plain" };
    assert.equal((await call(secret, "PUT", { ...text, authorization: owner })).status, 201);
    assert.equal(
      (await call(secret, "POST", { ...text, authorization: owner }, "s3cr3t")).status,
      204,
    );
    // A direct read is refused...
    assert.equal((await call(`${secret}?offset=-1`, "GET", { authorization: mine })).status, 403);
    // ...and so is the fork that would copy it into the caller's own scope, by path or URL.
    for (const from of ["/v1/stream/room/1/secret", secret]) {
      const fork = await call(`${f.base}/v1/stream/mine/leak`, "PUT", {
        authorization: mine,
        "stream-forked-from": from,
      });
      assert.equal(fork.status, 403, fork.text);
      assert.doesNotMatch(fork.text, /s3cr3t/);
    }
    const leak = await call(`${f.base}/v1/stream/mine/leak?offset=-1`, "GET", {
      authorization: mine,
    });
    assert.equal(leak.status, 404);
    assert.doesNotMatch(leak.text, /s3cr3t/);
    // With fetch on the source the same fork is made and reads the source's data.
    const allowed = await call(`${f.base}/v1/stream/mine/copy`, "PUT", {
      authorization: both,
      "stream-forked-from": "/v1/stream/room/1/secret",
    });
    assert.equal(allowed.status, 201, allowed.text);
    const copy = await call(`${f.base}/v1/stream/mine/copy?offset=-1`, "GET", {
      authorization: mine,
    });
    assert.equal(copy.text, "s3cr3t");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("A Stream-Forked-From that is not a URL is a 400, not a 500", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  assert.equal((await call(`${f.base}/v1/stream/src`, "PUT")).status, 201);
  for (const from of ["http://[bad/v1/stream/src", "https://exa mple.com/v1/stream/src"]) {
    const response = await call(`${f.base}/v1/stream/fork`, "PUT", { "stream-forked-from": from });
    assert.equal(response.status, 400, `${from}: ${response.text}`);
    assert.match(response.text, /Stream-Forked-From is not a valid URL/);
  }
});

Deno.test("Location of a created stream is its path, whatever Host the request names", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  const port = f.funnel.addr.port;
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const request = "PUT /v1/stream/room/a%20b HTTP/1.1\r\nHost: evil.example\r\n" +
      "Content-Length: 0\r\nConnection: close\r\n\r\n";
    await conn.write(new TextEncoder().encode(request));
    let raw = "";
    const buffer = new Uint8Array(4096);
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) break;
      raw += new TextDecoder().decode(buffer.subarray(0, n));
    }
    assert.match(raw, /^HTTP\/1\.1 201/);
    assert.match(raw, /\r\nlocation: \/v1\/stream\/room\/a%20b\r\n/i);
    assert.doesNotMatch(raw, /evil\.example/);
  } finally {
    try {
      conn.close();
    } catch {
      // Closed by the server already.
    }
  }
});

Deno.test("With FUNNEL_PUBLIC_URL, Location is that origin and the stream's path, whatever Host the request names", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel({ FUNNEL_PUBLIC_URL: "https://funnel.example" });
  const put = await fetch(`${f.base}/v1/stream/room/named`, {
    method: "PUT",
    headers: { host: "evil.example" },
  });
  await put.body?.cancel();
  assert.equal(put.status, 201);
  assert.equal(put.headers.get("location"), "https://funnel.example/v1/stream/room/named");
});

Deno.test("A stream created as text/html is never served as active content", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  const url = `${f.base}/v1/stream/page`;
  const html = { "content-type": "text/html" };
  assert.equal((await call(url, "PUT", html)).status, 201);
  const script = "<script>alert(document.cookie)</script>";
  assert.equal((await call(url, "POST", html, script)).status, 204);
  const read = await call(`${url}?offset=-1`, "GET");
  assert.equal(read.status, 200);
  assert.equal(read.text, script);
  // The bytes come back, as data a browser neither renders nor runs.
  assert.equal(read.headers.get("content-type"), "application/octet-stream");
  assert.equal(read.headers.get("x-content-type-options"), "nosniff");
  assert.match(read.headers.get("content-security-policy") ?? "", /default-src 'none'/);
  assert.match(read.headers.get("content-security-policy") ?? "", /sandbox/);
  assert.match(read.headers.get("content-disposition") ?? "", /^attachment/);
  // The stream's own type is still what it was created with, in the metadata.
  assert.equal((await call(url, "HEAD")).headers.get("content-type"), "text/html");
  // JSON and plain text are served as they are, still with nosniff and the CSP.
  const json = `${f.base}/v1/stream/data`;
  assert.equal((await call(json, "PUT", { "content-type": "application/json" })).status, 201);
  assert.equal(
    (await call(json, "POST", { "content-type": "application/json" }, '{"a":1}')).status,
    204,
  );
  const data = await call(`${json}?offset=-1`, "GET");
  assert.equal(data.headers.get("content-type"), "application/json");
  assert.match(data.headers.get("content-security-policy") ?? "", /default-src 'none'/);
  assert.equal(data.headers.get("content-disposition"), null);
});
