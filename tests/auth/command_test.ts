import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { createVerifier, keySourceFrom, runAuthCommand } from "../../src/auth/mod.ts";
import { withTempDir } from "../support/temp_dir.ts";
import { NOW, NOW_MS } from "../support/credentials.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(args: string[]): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await runAuthCommand(args, {
    stdout: (text) => stdout += text,
    stderr: (text) => stderr += text,
    now: () => NOW_MS,
  });
  return { code, stdout, stderr };
}

Deno.test("keygen then token: the credential verifies against the written key set", async () => {
  await withTempDir(async (dir) => {
    const keygen = await run(["keygen", "--out", `${dir}/key.jwk`, "--keys", `${dir}/keys.json`]);
    assert.equal(keygen.code, 0, keygen.stderr);
    assert.match(keygen.stdout, /created key set/);
    const mode = (await Deno.stat(`${dir}/key.jwk`)).mode! & 0o777;
    assert.equal(mode, 0o600);
    const privateJwk = JSON.parse(await Deno.readTextFile(`${dir}/key.jwk`));
    assert.equal(typeof privateJwk.d, "string");
    const set = JSON.parse(await Deno.readTextFile(`${dir}/keys.json`));
    assert.equal(set.keys.length, 1);
    assert.equal(set.keys[0].kid, privateJwk.kid);
    assert.equal(set.keys[0].d, undefined, "the key set holds the public half only");

    const token = await run([
      "token",
      "--key",
      `${dir}/key.jwk`,
      "--scope",
      "post,fetch:room/**",
      "--scope",
      "redact:room/1:chat",
      "--sub",
      "alice",
      "--ttl",
      "15m",
    ]);
    assert.equal(token.code, 0, token.stderr);
    const jwt = token.stdout.trim();
    assert.equal(decodeJwt(jwt).exp, NOW + 900);
    const verifier = await createVerifier(keySourceFrom(`${dir}/keys.json`, { pollMs: 0 }), {
      now: () => NOW_MS,
    });
    const grant = await verifier.verify(jwt);
    assert.equal(grant.sub, "alice");
    assert.ok(grant.allows("post", "room", "x"));
    assert.ok(grant.allows("fetch", "room/1/2", "x"));
    assert.ok(!grant.allows("post", "roomy", "x"));
    assert.ok(grant.allows("redact", "room/1", "chat"));
    assert.ok(!grant.allows("redact", "room/1", "other"));
    verifier.close();
  });
});

Deno.test("keygen refuses to overwrite a key file and leaves both files as they were", async () => {
  await withTempDir(async (dir) => {
    const args = ["keygen", "--out", `${dir}/key.jwk`, "--keys", `${dir}/keys.json`];
    assert.equal((await run(args)).code, 0);
    const keyBefore = await Deno.readTextFile(`${dir}/key.jwk`);
    const setBefore = await Deno.readTextFile(`${dir}/keys.json`);
    const again = await run(args);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /Refusing to overwrite the existing key file/);
    assert.equal(await Deno.readTextFile(`${dir}/key.jwk`), keyBefore);
    assert.equal(await Deno.readTextFile(`${dir}/keys.json`), setBefore);
  });
});

Deno.test("keygen adds to an existing key set, with the prefix", async () => {
  await withTempDir(async (dir) => {
    const keys = `${dir}/keys.json`;
    assert.equal((await run(["keygen", "--out", `${dir}/a.jwk`, "--keys", keys])).code, 0);
    const second = await run([
      "keygen",
      "--prefix",
      "tenant/b",
      "--out",
      `${dir}/b.jwk`,
      "--keys",
      keys,
    ]);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /added its public key to key set/);
    const set = JSON.parse(await Deno.readTextFile(keys));
    assert.equal(set.keys.length, 2);
    assert.equal(set.keys[1].prefix, "tenant/b");

    // A credential from the confined key reaches only its prefix, and the command warns.
    const token = await run(["token", "--key", `${dir}/b.jwk`, "--scope", "post:**"]);
    assert.equal(token.code, 0);
    const outside = await run(["token", "--key", `${dir}/b.jwk`, "--scope", "post:other"]);
    assert.equal(outside.code, 0);
    assert.match(outside.stderr, /outside the key's prefix "tenant\/b"/);
    const verifier = await createVerifier(keySourceFrom(keys, { pollMs: 0 }), {
      now: () => NOW_MS,
    });
    const grant = await verifier.verify(token.stdout.trim());
    assert.ok(grant.allows("post", "tenant/b/x", "t"));
    assert.ok(!grant.allows("post", "other", "t"));
    verifier.close();
  });
});

Deno.test("keygen refuses to extend a key set holding a private key", async () => {
  await withTempDir(async (dir) => {
    const keys = `${dir}/keys.json`;
    await run(["keygen", "--out", `${dir}/a.jwk`, "--keys", `${dir}/good.json`]);
    await Deno.writeTextFile(
      keys,
      JSON.stringify({ keys: [JSON.parse(await Deno.readTextFile(`${dir}/a.jwk`))] }),
    );
    const result = await run(["keygen", "--out", `${dir}/b.jwk`, "--keys", keys]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /private member "d"/);
    await assert.rejects(Deno.stat(`${dir}/b.jwk`), Deno.errors.NotFound);
  });
});

Deno.test("token with --path-auth grants publish and read paths", async () => {
  await withTempDir(async (dir) => {
    await run(["keygen", "--out", `${dir}/key.jwk`, "--keys", `${dir}/keys.json`]);
    const token = await run([
      "token",
      "--key",
      `${dir}/key.jwk`,
      "--path-auth",
      "root=org,pub=live,sub=watch",
    ]);
    assert.equal(token.code, 0, token.stderr);
    assert.deepEqual(decodeJwt(token.stdout.trim()).path_auth, {
      root: "org",
      pub: "live",
      sub: "watch",
    });
    const verifier = await createVerifier(keySourceFrom(`${dir}/keys.json`, { pollMs: 0 }), {
      now: () => NOW_MS,
    });
    const grant = await verifier.verify(token.stdout.trim());
    assert.ok(grant.allows("publish", "org/live"));
    assert.ok(grant.allows("subscribe", "org/watch/x", "t"));
    assert.ok(!grant.allows("post", "org/live", "t"));
    verifier.close();
  });
});

Deno.test("bad usage exits 2 with a clear message", async () => {
  await withTempDir(async (dir) => {
    await run(["keygen", "--out", `${dir}/key.jwk`, "--keys", `${dir}/keys.json`]);
    const key = `${dir}/key.jwk`;
    const cases: [string[], RegExp][] = [
      [[], /Missing subcommand/],
      [["rotate"], /Unknown subcommand "rotate"/],
      [["keygen", "--prefix", "/abs"], /leading slash/],
      [["keygen", "--bogus", "1"], /Unknown option "--bogus"/],
      [["keygen", "--out"], /needs a value/],
      [["keygen", "--out", "same", "--keys", "same"], /same file/],
      [["token", "--scope", "post:a"], /--key is required/],
      [["token", "--key", key], /at least one --scope/],
      [["token", "--key", key, "--scope", "post"], /not ACTIONS:BROADCAST/],
      [["token", "--key", key, "--scope", "shout:a"], /unknown action "shout"/],
      [["token", "--key", key, "--scope", "post:/a"], /leading slash/],
      [["token", "--key", key, "--scope", "post:a/*"], /trailing/],
      [["token", "--key", key, "--scope", "post:a", "--ttl", "2h"], /between 1s and 1h/],
      [["token", "--key", key, "--scope", "post:a", "--ttl", "soon"], /TTL "soon"/],
      [["token", "--key", key, "--scope", "post:a", "--sub", "a", "--sub", "b"], /twice/],
      [["token", "--key", key, "--scope", "post:a", "--path-auth", "root=a"], /not both/],
      [["token", "--key", key, "--path-auth", "root"], /root=R/],
      [["token", "--key", key, "stray"], /Unexpected argument "stray"/],
    ];
    for (const [args, message] of cases) {
      const result = await run(args);
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.match(result.stderr, message, args.join(" "));
      assert.equal(result.stdout, "", "nothing is printed on stdout");
    }
  });
});

Deno.test("token with an unreadable key exits 1 naming the file", async () => {
  const result = await run(["token", "--key", "/nonexistent/key.jwk", "--scope", "post:a"]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /\/nonexistent\/key\.jwk/);
});

Deno.test("ttl accepts seconds and units up to one hour", async () => {
  await withTempDir(async (dir) => {
    await run(["keygen", "--out", `${dir}/key.jwk`, "--keys", `${dir}/keys.json`]);
    for (const [ttl, seconds] of [["90", 90], ["45s", 45], ["60m", 3600], ["1h", 3600]] as const) {
      const result = await run([
        "token",
        "--key",
        `${dir}/key.jwk`,
        "--scope",
        "fetch:a",
        `--ttl=${ttl}`,
      ]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(decodeJwt(result.stdout.trim()).exp, NOW + seconds);
    }
  });
});

Deno.test("token --aud and --iss mint a credential a verifier requiring them accepts", async () => {
  await withTempDir(async (dir) => {
    await run(["keygen", "--out", `${dir}/key.jwk`, "--keys", `${dir}/keys.json`]);
    const base = ["token", "--key", `${dir}/key.jwk`, "--scope", "publish:room/**"];
    const token = await run([...base, "--aud", "relay.example", "--iss", "ops"]);
    assert.equal(token.code, 0, token.stderr);
    const jwt = token.stdout.trim();
    assert.equal(decodeJwt(jwt).aud, "relay.example");
    assert.equal(decodeJwt(jwt).iss, "ops");
    const verifier = await createVerifier(keySourceFrom(`${dir}/keys.json`, { pollMs: 0 }), {
      now: () => NOW_MS,
      audience: "relay.example",
      issuer: "ops",
    });
    await verifier.verify(jwt);
    const plain = (await run(base)).stdout.trim();
    await assert.rejects(verifier.verify(plain), /not meant for "relay\.example"/);
    verifier.close();
  });
});
