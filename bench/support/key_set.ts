import { createSigner, ed25519Thumbprint } from "../../src/auth/mod.ts";

/** A fresh Ed25519 key: its one-key JWK Set written to `<dir>/keys.json`, and the private JWK that signs for it. */
export async function writeKeySet(
  dir: string,
): Promise<{ keysFile: string; privateJwk: JsonWebKey & { kid: string } }> {
  const pair = await crypto.subtle.generateKey("Ed25519", true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  const kid = await ed25519Thumbprint(jwk.x!);
  const publicJwk = { kty: "OKP", crv: "Ed25519", x: jwk.x!, kid };
  const keysFile = `${dir}/keys.json`;
  await Deno.writeTextFile(keysFile, JSON.stringify({ keys: [publicJwk] }));
  return { keysFile, privateJwk: { ...publicJwk, d: jwk.d! } };
}

/** A fresh key set in `<dir>/keys.json` and an hour's token for it that may post under "bench". */
export async function writeBenchPoster(dir: string): Promise<{ keysFile: string; token: string }> {
  const { keysFile, privateJwk } = await writeKeySet(dir);
  const token = await (await createSigner(privateJwk)).sign({
    sub: "bench",
    scopes: [{ actions: ["post"], broadcast: { prefix: "bench" } }],
  }, { ttlSeconds: 3600 });
  return { keysFile, token };
}
