// The https path of the URL key source end to end: a real TLS server on port 0 with a
// throwaway CA made by openssl, the production https-only check left on.
import assert from "node:assert/strict";
import { createVerifier, keySourceFrom } from "../../src/auth/mod.ts";
import { ignoreWithout } from "../support/requires.ts";
import { claims, keySetText, makeKey, NOW_MS, signWith } from "../support/credentials.ts";

async function haveOpenssl(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("openssl", { args: ["version"], stdout: "null" })
      .output();
    return success;
  } catch {
    return false;
  }
}

const opensslMissing = await haveOpenssl() ? undefined : "openssl not found to make a test CA";
if (opensslMissing) console.warn(`SKIP https key source test: ${opensslMissing}`);

async function openssl(dir: string, args: string[]): Promise<void> {
  const result = await new Deno.Command("openssl", {
    args,
    cwd: dir,
    stdout: "null",
    stderr: "piped",
  })
    .output();
  if (!result.success) throw new Error(new TextDecoder().decode(result.stderr));
}

async function makeCertificates(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  await Deno.writeTextFile(
    `${dir}/leaf.ext`,
    "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
  );
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  await openssl(dir, [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "1",
    "-subj",
    "/CN=sluice test CA",
  ]);
  await openssl(dir, [
    "req",
    "-new",
    ...ec,
    "-keyout",
    "leaf.key",
    "-out",
    "leaf.csr",
    "-subj",
    "/CN=localhost",
  ]);
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    "leaf.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "leaf.pem",
    "-days",
    "1",
    "-extfile",
    "leaf.ext",
  ]);
  return {
    ca: await Deno.readTextFile(`${dir}/ca.pem`),
    cert: await Deno.readTextFile(`${dir}/leaf.pem`),
    key: await Deno.readTextFile(`${dir}/leaf.key`),
  };
}

Deno.test({
  name: "an https key set URL is fetched over TLS with the bearer token and revalidated",
  ignore: ignoreWithout("OpenSSL", opensslMissing),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "sluice-auth-tls-" });
    const { ca, cert, key } = await makeCertificates(dir);
    const signing = await makeKey();
    const body = keySetText(signing);
    const seen: (string | null)[][] = [];
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", cert, key, onListen: () => {} },
      (request) => {
        seen.push([request.headers.get("authorization"), request.headers.get("if-none-match")]);
        if (request.headers.get("if-none-match") === '"k1"') {
          return new Response(null, { status: 304 });
        }
        return new Response(body, { headers: { etag: '"k1"' } });
      },
    );
    const client = Deno.createHttpClient({ caCerts: [ca] });
    const source = keySourceFrom(`https://127.0.0.1:${server.addr.port}/keys.json`, {
      bearerToken: "tok",
      pollMs: 0,
      cacheFile: `${dir}/cache.json`,
      fetch: ((input: RequestInfo | URL, init?: RequestInit) =>
        fetch(input, { ...init, client })) as typeof fetch,
    });
    const verifier = await createVerifier(source, { now: () => NOW_MS });
    try {
      await verifier.verify(await signWith(signing, claims()));
      assert.equal(await source.refresh(), false);
      assert.deepEqual(seen, [["Bearer tok", null], ["Bearer tok", '"k1"']]);
      assert.equal(await Deno.readTextFile(`${dir}/cache.json`), body);
    } finally {
      verifier.close();
      client.close();
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("an https key set URL that redirects to http is refused, and the bearer token never leaves its origin", async () => {
  const { testCertificate } = await import("../support/certs.ts");
  const c = await testCertificate();
  const key = await makeKey();
  const seen: { url: string; authorization: string | null }[] = [];
  // The plain-http server an attacker (or a misconfigured proxy) points the redirect at.
  const plain = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    seen.push({ url: req.url, authorization: req.headers.get("authorization") });
    return new Response(keySetText(key), { headers: { "content-type": "application/json" } });
  });
  const target = `http://127.0.0.1:${plain.addr.port}/keys.json`;
  const tls: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: c.certPem, key: c.keyPem, onListen: () => {} },
    (req): Response => {
      seen.push({ url: req.url, authorization: req.headers.get("authorization") });
      const path = new URL(req.url).pathname;
      if (path === "/loop") return Response.redirect(`https://127.0.0.1:${tls.addr.port}/loop`);
      return path === "/same"
        ? Response.redirect(`https://localhost:${tls.addr.port}/cross`, 302)
        : Response.redirect(target, 302);
    },
  );
  const client = Deno.createHttpClient({ caCerts: [c.certPem] });
  const viaClient: typeof fetch = (input, init) => fetch(input, { ...init, client });
  try {
    const source = keySourceFrom(`https://127.0.0.1:${tls.addr.port}/keys.json`, {
      fetch: viaClient,
      bearerToken: "relay-token",
      pollMs: 0,
      log: () => {},
    });
    await assert.rejects(
      source.start(),
      /redirects to "http:\/\/127\.0\.0\.1:\d+\/keys\.json".*https/,
    );
    assert.ok(!seen.some((s) => s.url === target), "the http URL was never fetched");
    // A redirect to another origin (localhost is not 127.0.0.1) is followed without the token.
    const other = keySourceFrom(`https://127.0.0.1:${tls.addr.port}/same`, {
      fetch: viaClient,
      bearerToken: "relay-token",
      pollMs: 0,
      log: () => {},
    });
    await assert.rejects(other.start());
    const cross = seen.find((s) => s.url.endsWith("/cross"));
    assert.ok(cross, "the https redirect was followed");
    assert.equal(cross.authorization, null, "no bearer token sent to another origin");
    // A redirect loop ends after MAX_KEY_SET_REDIRECTS.
    const before = seen.length;
    const loop = keySourceFrom(`https://127.0.0.1:${tls.addr.port}/loop`, {
      fetch: viaClient,
      pollMs: 0,
      log: () => {},
    });
    await assert.rejects(loop.start(), /redirects more than 5 times/);
    assert.equal(seen.length - before, 6, "the first request and 5 redirects");
  } finally {
    client.close();
    await tls.shutdown();
    await plain.shutdown();
  }
});
