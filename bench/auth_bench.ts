// Credential verification cost: a full EdDSA check (cache off) against a cache hit,
// which still re-checks expiry and key presence. Run: deno bench --allow-all bench/auth_bench.ts
import { exportJWK, generateKeyPair } from "jose";
import {
  createSigner,
  createVerifier,
  extractBearer,
  MemoryKeySource,
  parseKeySet,
} from "../src/auth/mod.ts";

const { privateKey } = await generateKeyPair("EdDSA", { extractable: true });
const signer = await createSigner(await exportJWK(privateKey));
const jwk = await exportJWK(privateKey);
const set = await parseKeySet(JSON.stringify({ keys: [{ kty: "OKP", crv: "Ed25519", x: jwk.x }] }));
const token = await signer.sign({
  sub: "bench",
  scopes: [{ actions: ["post", "fetch"], broadcast: { prefix: "room" } }],
});
const header = `Bearer ${token}`;
const cold = await createVerifier(new MemoryKeySource(set), { cacheSize: 0 });
const cached = await createVerifier(new MemoryKeySource(set));
await cached.verify(token);

Deno.bench("verify, cold (signature checked)", { group: "verify", baseline: true }, async () => {
  await cold.verify(token);
});

Deno.bench("verify, cached (expiry and key re-checked)", { group: "verify" }, async () => {
  await cached.verify(token);
});

Deno.bench("extractBearer + cached verify + allows", { group: "verify" }, async () => {
  const grant = await cached.verify(extractBearer(header));
  if (!grant.allows("post", "room/1", "chat")) throw new Error("unexpected refusal");
});

Deno.bench("sign a credential", async () => {
  await signer.sign({ scopes: [{ actions: ["publish"], broadcast: { prefix: "live" } }] });
});
