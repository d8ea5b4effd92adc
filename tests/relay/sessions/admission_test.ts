import assert from "node:assert/strict";
import { createVerifier, MemoryKeySource, signToken } from "../../../src/auth/mod.ts";
import { originPolicy } from "../../../src/http/mod.ts";
import { webTransportAdmission } from "../../../src/listeners/mod.ts";
import { VERSIONS } from "../../../src/moq/mod.ts";
import { admitSession, sessionRoot } from "../../../src/relay/sessions/session_grants.ts";
import type { WebTransportRequest } from "../../../src/transport/mod.ts";
import { keySetOf, makeKey } from "../../support/credentials.ts";

function request(url: string, protocols: string[], origin?: string): WebTransportRequest {
  const u = new URL(url);
  return {
    method: "CONNECT",
    url: u,
    path: u.pathname,
    query: u.searchParams,
    origin,
    protocols,
    headers: [],
    remote: "127.0.0.1:1",
  };
}

Deno.test("WebTransport admission: protocol, origin, then credential", async () => {
  const key = await makeKey();
  const verifier = await createVerifier(new MemoryKeySource(await keySetOf(key)));
  const token = await signToken(key.privateJwk, {
    scopes: [{ actions: ["publish"], broadcast: { prefix: "live" } }],
  });
  const admit = webTransportAdmission({
    protocols: VERSIONS,
    origins: originPolicy(["https://app.example"]),
    admitCredential: (url) => admitSession(url, verifier),
  });
  assert.equal((await admit(request("https://r/", ["moq-transport-07"]))).status, 400);
  assert.equal(
    (await admit(request(`https://r/?jwt=${token}`, ["moq-lite-05"], "https://x.example"))).status,
    403,
  );
  assert.equal((await admit(request("https://r/", ["moq-lite-05"]))).status, 401);
  assert.equal((await admit(request(`https://r/other?jwt=${token}`, ["moq-lite-05"]))).status, 403);
  assert.deepEqual(
    await admit(
      request(`https://r/live?jwt=${token}`, ["moq-lite-04", "moq-lite-05"], "https://app.example"),
    ),
    { status: 200, protocol: "moq-lite-05" },
  );
  // No key set: anything with a supported protocol is admitted.
  const open = webTransportAdmission({
    protocols: VERSIONS,
    origins: originPolicy("*"),
    admitCredential: (url) => admitSession(url, undefined),
  });
  assert.deepEqual(await open(request("https://r/x", [])), {
    status: 200,
    protocol: "moq-lite-04",
  });
  verifier.close();
});

Deno.test("the session root is the URL path; without a key set every session is admitted", async () => {
  assert.equal(sessionRoot(new URL("https://r/a/b/?jwt=x")), "a/b");
  assert.equal(sessionRoot(undefined), "");
  assert.deepEqual(await admitSession(new URL("https://r/"), undefined), {
    grant: undefined,
    root: "",
    peer: false,
  });
  // With auth off, a session is a peer when its URL says so.
  assert.equal((await admitSession(new URL("https://r/?peer=relay-b"), undefined)).peer, true);
});
