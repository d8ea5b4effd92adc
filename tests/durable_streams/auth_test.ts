// The funnel's credentials on /v1/stream/: post creates and appends (the sender is
// the credential's sub), fetch reads, redact deletes, each within the scope's broadcast.
import assert from "node:assert/strict";
import { keySetText, makeKey, signWith } from "../support/credentials.ts";
import { quiet } from "../support/quiet.ts";
import { startLiveFunnel } from "../support/live_funnel.ts";

Deno.test("Auth on: stream requests need a credential whose scope covers the action and the stream", async () => {
  using _q = quiet();
  const key = await makeKey();
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/keys.json`, keySetText(key));
  await using f = await startLiveFunnel({ SLUICE_AUTH_KEYS: `${dir}/keys.json` });
  const now = Math.floor(Date.now() / 1000);
  const token = (actions: string[], prefix = "room") =>
    signWith(key, {
      sub: "alice",
      scopes: [{ actions, broadcast: { prefix } }],
      iat: now,
      nbf: now,
      exp: now + 600,
    });
  const writer = await token(["post"]);
  const reader = await token(["fetch"]);
  const remover = await token(["redact"]);
  const elsewhere = await token(["post", "fetch", "redact"], "other");
  const url = `${f.base}/v1/stream/room/1/log`;
  const call = async (method: string, credential?: string, body?: string) => {
    const response = await fetch(url, {
      method,
      headers: {
        "content-type": "text/plain",
        ...(credential ? { authorization: `Bearer ${credential}` } : {}),
      },
      ...(body !== undefined ? { body } : {}),
    });
    await response.body?.cancel();
    return response;
  };
  try {
    assert.equal((await call("PUT")).status, 401);
    assert.match((await call("PUT")).headers.get("www-authenticate") ?? "", /^Bearer/);
    assert.equal((await call("PUT", reader)).status, 403);
    assert.equal((await call("PUT", elsewhere)).status, 403);
    assert.equal((await call("PUT", writer)).status, 201);
    assert.equal((await call("POST", writer, "hello")).status, 204);
    assert.equal((await call("POST", reader, "no")).status, 403);
    assert.equal((await call("GET")).status, 401);
    assert.equal((await call("GET", writer)).status, 403);
    const read = await fetch(`${url}?offset=-1`, {
      headers: { authorization: `Bearer ${reader}` },
    });
    assert.equal(await read.text(), "hello");
    assert.equal((await call("HEAD", reader)).status, 200);
    // Reads of a stream are private to credentials: CDNs must key them by the credential.
    assert.match(read.headers.get("cache-control") ?? "", /^private/);
    const history = await fetch(`${f.base}/tracks/room/1/log?limit=5`, {
      headers: { authorization: `Bearer ${reader}` },
    });
    const records = (await history.json()).records;
    assert.deepEqual(records.map((r: { sender?: string }) => r.sender), ["alice", "alice"]);
    assert.equal((await call("DELETE", writer)).status, 403);
    assert.equal((await call("DELETE", remover)).status, 204);
    assert.equal((await call("HEAD", reader)).status, 404);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
