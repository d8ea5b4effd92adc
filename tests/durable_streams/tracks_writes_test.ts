// A Durable Stream's track is also a /tracks/ track: records posted there are appends without a
// producer, refused (409) once the stream is closed, and refused for a stream whose content type
// is not JSON; a JSON stream that is open takes them. Closure survives a restart of the funnel
// on the directory ledger, for /tracks/ POSTs as for the protocol.
import assert from "node:assert/strict";
import { post, startLiveFunnel } from "../support/live_funnel.ts";
import { quiet } from "../support/quiet.ts";
import { withTempDir } from "../support/temp_dir.ts";

const JSON_TYPE = { "content-type": "application/json" };

/** A /tracks/ POST whose answer the test reads in full (the support `post` keeps only 201s). */
function postRecord(base: string, path: string, body: string): Promise<Response> {
  return fetch(`${base}/tracks/${path}`, { method: "POST", headers: JSON_TYPE, body });
}

async function messages(base: string, name: string): Promise<unknown> {
  const res = await fetch(`${base}/v1/stream/${name}?offset=-1`);
  assert.equal(res.status, 200);
  return await res.json();
}

Deno.test("/tracks/ POSTs to a stream's track: taken while open, 409 Stream-Closed once closed", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  const url = `${f.base}/v1/stream/notes/list`;
  assert.equal((await fetch(url, { method: "PUT", headers: JSON_TYPE })).status, 201);
  assert.equal((await post(f.base, "notes/list", `{"n":1}`)).status, 201);
  const close = await fetch(url, { method: "POST", headers: { "stream-closed": "true" } });
  assert.equal(close.status, 204);
  const refused = await postRecord(f.base, "notes/list", `{"n":2}`);
  assert.equal(refused.status, 409);
  assert.equal(refused.headers.get("stream-closed"), "true");
  assert.match((await refused.json()).detail, /closed/);
  assert.deepEqual(await messages(f.base, "notes/list"), [{ n: 1 }]);
  // Deleting the stream lifts the refusal: the track takes records again.
  assert.equal((await fetch(url, { method: "DELETE" })).status, 204);
  assert.equal((await post(f.base, "notes/list", `{"n":3}`)).status, 201);
});

Deno.test("/tracks/ POSTs to a byte stream's track are refused, naming its content type", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  const url = `${f.base}/v1/stream/files/log`;
  const put = await fetch(url, { method: "PUT", headers: { "content-type": "text/plain" } });
  assert.equal(put.status, 201);
  const refused = await postRecord(f.base, "files/log", `{"n":1}`);
  assert.equal(refused.status, 409);
  assert.equal(refused.headers.get("stream-closed"), null);
  assert.match((await refused.json()).detail, /text\/plain/);
  const appended = await fetch(url, {
    method: "POST",
    headers: { "content-type": "text/plain" },
    body: "line\n",
  });
  assert.equal(appended.status, 204);
  assert.equal(await (await fetch(`${url}?offset=-1`)).text(), "line\n");
});

Deno.test("a stream closed before a restart refuses /tracks/ POSTs and appends after it (directory ledger)", async () => {
  using _q = quiet();
  await withTempDir(async (dir) => {
    const env = { LEDGER_URI: `file://${dir}` };
    {
      await using f = await startLiveFunnel(env);
      const url = `${f.base}/v1/stream/done`;
      assert.equal((await fetch(url, { method: "PUT", headers: JSON_TYPE })).status, 201);
      const last = await fetch(url, {
        method: "POST",
        headers: { ...JSON_TYPE, "stream-closed": "true" },
        body: `{"n":1}`,
      });
      assert.equal(last.status, 204);
    }
    await using f = await startLiveFunnel(env);
    const refused = await postRecord(f.base, "done/stream", `{"n":2}`);
    assert.equal(refused.status, 409);
    assert.equal(refused.headers.get("stream-closed"), "true");
    await refused.body?.cancel();
    const append = await fetch(`${f.base}/v1/stream/done`, {
      method: "POST",
      headers: JSON_TYPE,
      body: `{"n":3}`,
    });
    assert.equal(append.status, 409);
    await append.body?.cancel();
    assert.deepEqual(await messages(f.base, "done"), [{ n: 1 }]);
  });
});
