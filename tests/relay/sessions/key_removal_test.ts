// A relay session lives no longer than the key that signed its credential:
// removing the key from SLUICE_AUTH_KEYS (a file the relay polls every
// second, its default) closes the sessions it admitted, while sessions of
// the keys that remain go on.
import assert from "node:assert/strict";
import { createVerifier, FileKeySource, signToken } from "../../../src/auth/mod.ts";
import { MoqCode } from "../../../src/moq/mod.ts";
import { keySetText, makeKey } from "../../support/credentials.ts";
import { dialOurs } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay } from "../../support/test_relay.ts";
import { within } from "../../support/wait.ts";

Deno.test("removing a key from the key set closes the relay sessions it admitted", async () => {
  using _q = quiet();
  const dir = await Deno.makeTempDir();
  const file = `${dir}/keys.json`;
  const kept = await makeKey();
  const removed = await makeKey();
  await Deno.writeTextFile(file, keySetText(kept, removed));
  const verifier = await createVerifier(new FileKeySource(file));
  const t = await startTestRelay({ extra: { verifier } });
  const scopes = [{ actions: ["subscribe" as const], broadcast: { prefix: "room" } }];
  try {
    const revoked = await dialOurs(t.port, {
      jwt: await signToken(removed.privateJwk, { sub: "old", scopes }, { ttlSeconds: 3600 }),
    });
    const staying = await dialOurs(t.port, {
      jwt: await signToken(kept.privateJwk, { sub: "new", scopes }, { ttlSeconds: 3600 }),
    });
    await Deno.writeTextFile(file, keySetText(kept));
    // The file is polled every second and the key set looked at every second.
    const info = await within(revoked.closed, 10_000, "the session of the removed key to end");
    assert.equal(info.code, MoqCode.Unauthorized);
    assert.equal(staying.isClosed, false, "the session of a remaining key goes on");
    assert.ok(
      t.logs.some((l) => l.includes("its credential is no longer valid")),
      t.logs.join("\n"),
    );
    assert.equal(
      t.relay.metrics.sessionsClosedTotal.value({
        transport: "quic",
        class: "client",
        reason: "expired",
      }),
      1,
    );
    staying.close();
  } finally {
    await t.stop();
    verifier.close();
    await Deno.remove(dir, { recursive: true });
  }
});
