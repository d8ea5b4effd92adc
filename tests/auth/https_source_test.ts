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
