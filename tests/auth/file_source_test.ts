import assert from "node:assert/strict";
import {
  AuthError,
  createVerifier,
  FileKeySource,
  keySourceFrom,
  UrlKeySource,
} from "../../src/auth/mod.ts";
import { withTempDir } from "../support/temp_dir.ts";
import { claims, keySetText, makeKey, NOW_MS, signWith } from "../support/credentials.ts";
import { ManualClock } from "../support/manual_clock.ts";

Deno.test("a missing or refused key set file stops the start with its path", async () => {
  await withTempDir(async (dir) => {
    const missing = new FileKeySource(`${dir}/absent.json`, { pollMs: 0 });
    await assert.rejects(missing.start(), /absent\.json/);
    const key = await makeKey();
    await Deno.writeTextFile(`${dir}/private.json`, JSON.stringify({ keys: [key.privateJwk] }));
    const privateSet = new FileKeySource(`${dir}/private.json`, { pollMs: 0 });
    await assert.rejects(privateSet.start(), /private\.json is refused: .*private member "d"/);
  });
});

Deno.test("a key set file is re-read on change; a credential whose key left is refused", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/keys.json`;
    const a = await makeKey();
    const b = await makeKey();
    await Deno.writeTextFile(path, keySetText(a));
    const source = new FileKeySource(path, { pollMs: 0 });
    const verifier = await createVerifier(source, { now: () => NOW_MS });
    const tokenA = await signWith(a, claims());
    const tokenB = await signWith(b, claims());
    await verifier.verify(tokenA);
    await assert.rejects(verifier.verify(tokenB), AuthError);

    assert.equal(await source.refresh(), false, "unchanged file: no new set");
    await Deno.writeTextFile(path, keySetText(b));
    assert.equal(await source.refresh(), true);
    await assert.rejects(
      verifier.verify(tokenA),
      (error: AuthError) => error.code === "unknown_key",
    );
    await verifier.verify(tokenB);
    verifier.close();
  });
});

Deno.test("a broken key set file keeps the last good set and is reported once", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/keys.json`;
    const a = await makeKey();
    await Deno.writeTextFile(path, keySetText(a));
    const logs: string[] = [];
    const source = new FileKeySource(path, { pollMs: 0, log: (line) => logs.push(line) });
    const verifier = await createVerifier(source, { now: () => NOW_MS });
    const token = await signWith(a, claims());

    await Deno.writeTextFile(path, '{"keys": [');
    assert.equal(await source.refresh(), false);
    assert.equal(await source.refresh(), false);
    assert.equal(logs.length, 1, logs.join("\n"));
    assert.match(logs[0]!, /keeping the last good set/);
    await verifier.verify(token);

    await Deno.writeTextFile(path, JSON.stringify({ keys: [a.privateJwk] }));
    assert.equal(await source.refresh(), false);
    assert.equal(logs.length, 2);
    await verifier.verify(token);

    await Deno.remove(path);
    assert.equal(await source.refresh(), false);
    await verifier.verify(token);
    verifier.close();
  });
});

Deno.test("the file is polled on the injected timer until closed", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/keys.json`;
    const a = await makeKey();
    const b = await makeKey();
    await Deno.writeTextFile(path, keySetText(a));
    const timers = new ManualClock();
    const source = new FileKeySource(path, { pollMs: 250, timers });
    await source.start();
    assert.deepEqual(timers.pending, [250]);

    await Deno.writeTextFile(path, keySetText(b));
    timers.fireNext();
    await source.refresh(); // joins the poll the timer started
    assert.ok(source.current().get(b.kid));
    assert.equal(source.current().get(a.kid), undefined);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(timers.pending.length, 1, "the next poll is scheduled after the last one ends");

    source.close();
    assert.equal(timers.pending.length, 0, "close cancels the next poll");
  });
});

Deno.test("keySourceFrom tells files from URLs and refuses plain http", () => {
  const file = keySourceFrom("/etc/sluice/keys.json");
  assert.ok(file instanceof FileKeySource);
  assert.equal(file.location, "/etc/sluice/keys.json");
  const relative = keySourceFrom("keys.json");
  assert.ok(relative instanceof FileKeySource);
  const fileUrl = keySourceFrom("file:///etc/sluice/my%20keys.json");
  assert.ok(fileUrl instanceof FileKeySource);
  assert.equal(fileUrl.location, "/etc/sluice/my keys.json");
  const url = keySourceFrom("https://auth.example/keys.json", { bearerToken: "t" });
  assert.ok(url instanceof UrlKeySource);
  assert.throws(() => keySourceFrom("http://auth.example/keys.json"), /must use https/);
  assert.ok(keySourceFrom("http://127.0.0.1:1/k", { allowHttp: true }) instanceof UrlKeySource);
  assert.throws(() => keySourceFrom("ftp://auth.example/keys.json"), TypeError);
  assert.throws(() => keySourceFrom(""), TypeError);
});
