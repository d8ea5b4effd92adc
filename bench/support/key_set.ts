import { ed25519Thumbprint } from "../../src/auth/mod.ts";

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
