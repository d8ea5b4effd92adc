import assert from "node:assert/strict";
import {
  type AuthError,
  createVerifier,
  MAX_KEY_SET_STALENESS_MS,
  UrlKeySource,
} from "../../src/auth/mod.ts";
import { withTempDir } from "../support/temp_dir.ts";
import { claims, keySetText, makeKey, NOW_MS, signWith } from "../support/credentials.ts";
import { ManualClock } from "../support/manual_clock.ts";

interface Seen {
  authorization: string | null;
  ifNoneMatch: string | null;
}

/** A real HTTP server on port 0 serving a key set with an ETag. */
class KeyServer {
  body = "";
  etag = '"v1"';
  status = 200;
  seen: Seen[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;

  constructor() {
    this.#server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request) => {
      const ifNoneMatch = request.headers.get("if-none-match");
      this.seen.push({ authorization: request.headers.get("authorization"), ifNoneMatch });
      if (this.status !== 200) return new Response("unavailable", { status: this.status });
      if (ifNoneMatch === this.etag) return new Response(null, { status: 304 });
      return new Response(this.body, {
        headers: { "content-type": "application/json", etag: this.etag },
      });
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}/keys.json`;
  }

  stop(): Promise<void> {
    return this.#server.shutdown();
  }
}

Deno.test("the URL source sends the bearer token, caches the set and revalidates with If-None-Match", async () => {
  await withTempDir(async (dir) => {
    const server = new KeyServer();
    const a = await makeKey();
    const b = await makeKey();
    server.body = keySetText(a);
    const cacheFile = `${dir}/cache.json`;
    const source = new UrlKeySource(server.url, {
      allowHttp: true,
      pollMs: 0,
      bearerToken: "relay-secret",
      cacheFile,
    });
    const verifier = await createVerifier(source, { now: () => NOW_MS });
    try {
      assert.deepEqual(server.seen, [{ authorization: "Bearer relay-secret", ifNoneMatch: null }]);
      assert.equal(await Deno.readTextFile(cacheFile), server.body);
      await verifier.verify(await signWith(a, claims()));

      assert.equal(await source.refresh(), false, "304: nothing new");
      assert.deepEqual(server.seen[1], {
        authorization: "Bearer relay-secret",
        ifNoneMatch: '"v1"',
      });

      server.body = keySetText(b);
      server.etag = '"v2"';
      assert.equal(await source.refresh(), true);
      assert.equal(server.seen[2]?.ifNoneMatch, '"v1"');
      await assert.rejects(
        verifier.verify(await signWith(a, claims())),
        (error: AuthError) => error.code === "unknown_key",
      );
      await verifier.verify(await signWith(b, claims()));
      assert.equal(await Deno.readTextFile(cacheFile), server.body, "cache follows the new set");
    } finally {
      verifier.close();
      await server.stop();
    }
  });
});

Deno.test("after a failed refresh the last good set stays in force", async () => {
  await withTempDir(async (dir) => {
    const server = new KeyServer();
    const a = await makeKey();
    server.body = keySetText(a);
    const cacheFile = `${dir}/cache.json`;
    const logs: string[] = [];
    const source = new UrlKeySource(server.url, {
      allowHttp: true,
      pollMs: 0,
      cacheFile,
      log: (line) => logs.push(line),
    });
    const verifier = await createVerifier(source, { now: () => NOW_MS });
    const token = await signWith(a, claims());
    try {
      server.status = 500;
      assert.equal(await source.refresh(), false);
      assert.match(logs.at(-1)!, /answered HTTP 500/);
      await verifier.verify(token);

      server.status = 200;
      server.etag = '"bad"';
      server.body = JSON.stringify({ keys: [a.privateJwk] });
      assert.equal(await source.refresh(), false);
      assert.match(logs.at(-1)!, /private member/);
      await verifier.verify(token);
      assert.equal(
        await Deno.readTextFile(cacheFile),
        keySetText(a),
        "a refused set is not cached",
      );

      server.body = "not json";
      assert.equal(await source.refresh(), false);
      await verifier.verify(token);
    } finally {
      verifier.close();
      await server.stop();
    }
  });
});

Deno.test("at start an unreachable URL falls back to the cache file", async () => {
  await withTempDir(async (dir) => {
    const a = await makeKey();
    const cacheFile = `${dir}/cache.json`;
    await Deno.writeTextFile(cacheFile, keySetText(a));
    const server = new KeyServer();
    server.status = 503;
    const logs: string[] = [];
    const source = new UrlKeySource(server.url, {
      allowHttp: true,
      pollMs: 0,
      cacheFile,
      log: (line) => logs.push(line),
    });
    const verifier = await createVerifier(source, { now: () => NOW_MS });
    try {
      assert.match(logs.join("\n"), /using the key set cached in .*cache\.json/);
      await verifier.verify(await signWith(a, claims()));

      // Once the URL answers, its set replaces the cached one.
      const b = await makeKey();
      server.status = 200;
      server.body = keySetText(b);
      assert.equal(await source.refresh(), true);
      await verifier.verify(await signWith(b, claims()));
      assert.equal(await Deno.readTextFile(cacheFile), keySetText(b));
    } finally {
      verifier.close();
      await server.stop();
    }
  });
});

Deno.test("at start an unreachable URL without a usable cache is an error", async () => {
  await withTempDir(async (dir) => {
    const server = new KeyServer();
    const url = server.url;
    await server.stop(); // nothing listens there now
    const noCache = new UrlKeySource(url, { allowHttp: true, pollMs: 0 });
    await assert.rejects(noCache.start(), /Cannot fetch key set/);
    const badCache = new UrlKeySource(url, {
      allowHttp: true,
      pollMs: 0,
      cacheFile: `${dir}/absent.json`,
    });
    await assert.rejects(badCache.start(), /absent\.json cannot be read/);
  });
});

Deno.test("production configuration accepts https only", () => {
  assert.throws(() => new UrlKeySource("http://127.0.0.1/keys.json"), /must use https/);
  assert.ok(new UrlKeySource("https://127.0.0.1/keys.json"));
});

Deno.test("an injected fetch sees the request and an oversized set is refused", async () => {
  const a = await makeKey();
  const requests: Request[] = [];
  let body = keySetText(a);
  const fetcher = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    requests.push(new Request(input, init));
    return Promise.resolve(new Response(body, { headers: { etag: 'W/"1"' } }));
  };
  const source = new UrlKeySource("https://keys.example/set", {
    pollMs: 0,
    fetch: fetcher as typeof fetch,
    log: () => {},
  });
  await source.start();
  assert.equal(requests[0]?.url, "https://keys.example/set");
  assert.equal(requests[0]?.headers.get("authorization"), null, "no token configured, none sent");
  body = " ".repeat((1 << 20) + 1);
  assert.equal(await source.refresh(), false);
  assert.equal(requests[1]?.headers.get("if-none-match"), 'W/"1"');
  assert.ok(source.current().get(a.kid));
  source.close();
});

Deno.test("a request with no answer is abandoned on the injected timeout", async () => {
  const timers = new ManualClock();
  const hanging = (_input: RequestInfo | URL, init?: RequestInit): Promise<Response> =>
    new Promise((_resolve, reject) => {
      init?.signal?.addEventListener("abort", () => reject(init.signal?.reason));
    });
  const source = new UrlKeySource("https://keys.example/set", {
    pollMs: 0,
    timeoutMs: 5000,
    timers,
    fetch: hanging as typeof fetch,
  });
  const started = source.start();
  assert.equal(timers.pending.length, 1);
  timers.fireNext();
  await assert.rejects(started, /no answer within 5000 ms/);
  source.close();
});

Deno.test("a key set URL that fails for longer than an hour (the default) leaves no key in force until it answers", async () => {
  const server = new KeyServer();
  const a = await makeKey();
  server.body = keySetText(a);
  const clock = new ManualClock(NOW_MS);
  const logs: string[] = [];
  const source = new UrlKeySource(server.url, {
    allowHttp: true,
    pollMs: 0,
    now: clock.now,
    log: (line) => logs.push(line),
  });
  const verifier = await createVerifier(source, { now: () => NOW_MS });
  const token = await signWith(a, claims());
  try {
    // Blocked or broken: the last good set stays in force for an hour.
    server.status = 503;
    clock.advance(MAX_KEY_SET_STALENESS_MS);
    assert.equal(await source.refresh(), false);
    await verifier.verify(token);
    clock.advance(1);
    await assert.rejects(
      verifier.verify(token),
      (error: AuthError) => error.code === "unknown_key",
    );
    assert.match(logs.at(-1)!, /has not answered for over 3600 s: refusing every credential/);
    // It answers again (304: the same set): the keys are back.
    server.status = 200;
    assert.equal(await source.refresh(), false);
    await verifier.verify(token);
    assert.match(logs.at(-1)!, /answers again/);
  } finally {
    verifier.close();
    await server.stop();
  }
});

Deno.test("a cache older than the staleness bound is not made fresh by a restart while the URL is down", async () => {
  await withTempDir(async (dir) => {
    const a = await makeKey();
    const cacheFile = `${dir}/cache.json`;
    await Deno.writeTextFile(cacheFile, keySetText(a));
    // Last confirmed two hours ago.
    const then = new Date(NOW_MS - 2 * MAX_KEY_SET_STALENESS_MS);
    await Deno.utime(cacheFile, then, then);
    const server = new KeyServer();
    server.status = 503;
    const clock = new ManualClock(NOW_MS);
    const source = new UrlKeySource(server.url, {
      allowHttp: true,
      pollMs: 0,
      cacheFile,
      now: clock.now,
      log: () => {},
    });
    const verifier = await createVerifier(source, { now: () => NOW_MS });
    const token = await signWith(a, claims());
    try {
      await assert.rejects(
        verifier.verify(token),
        (error: AuthError) => error.code === "unknown_key",
      );
      server.status = 200;
      server.body = keySetText(a);
      assert.equal(await source.refresh(), true);
      await verifier.verify(token);
      // Each confirmation dates the cache, so the next start trusts it again for an hour.
      assert.equal((await Deno.stat(cacheFile)).mtime?.getTime(), NOW_MS);
    } finally {
      verifier.close();
      await server.stop();
    }
  });
});
