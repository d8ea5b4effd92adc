// The funnel's own MoQ listener also serves QMux over WebSocket on the TCP port
// with the number of its UDP port, admitted like its WebTransport sessions.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import {
  createVerifier,
  MemoryKeySource,
  signToken,
  type TokenClaims,
} from "../../../src/auth/mod.ts";
import { keySetOf, makeKey, type TestKey } from "../../support/credentials.ts";
import { testCertificate } from "../../support/certs.ts";
import { dialNet, dialOurs } from "../../support/moq.ts";
import { upgradeStatus } from "../../support/qmux.ts";
import { quiet } from "../../support/quiet.ts";
import { until } from "../../support/wait.ts";
import { post, send, startLiveFunnel, take, takeNet } from "../../support/live_funnel.ts";

Deno.test("Subscribers over WebSocket (ours on every draft, @moq/net falling back) get every record", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  assert.match(
    f.funnel.live.serveLine ?? "",
    new RegExp(`wss://127\\.0\\.0\\.1:${f.moqPort} \\(WebSocket\\) on TCP`),
  );
  assert.equal(await send(f.base, "PUT", "/tracks/room/1/chat"), 201);
  const ours = await Promise.all(
    (["qmux-02", "qmux-01", "qmux-00"] as const).map((d) =>
      dialOurs(f.moqPort, { webSocket: [d] })
    ),
  );
  const quic = await dialOurs(f.moqPort);
  const net = await dialNet(f.moqPort, { webSocket: true });
  try {
    const subs = [...ours, quic].map((m) => m.subscribe("room/1", "chat"));
    await Promise.all(subs.map((s) => s.ready));
    const netSub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
    const listener = f.funnel.live.listener!;
    await until(async () => await listener.subscribers("room/1", "chat") === 5, "five subscribers");
    // 48 records in batches of 8, each batch read by everyone before the next: within
    // the listener's per-subscriber bound, so none is skipped forward on a slow machine.
    for (let batch = 0; batch < 6; batch++) {
      const bodies = Array.from({ length: 8 }, (_, i) => `{"n":${batch * 8 + i}}`);
      for (const body of bodies) await post(f.base, "room/1/chat", body);
      const want = bodies.map((b, i) => ({ seq: batch * 8 + i + 1, frame: `{"payload":${b}}` }));
      for (const sub of subs) assert.deepEqual(await take(sub, bodies.length), want);
      assert.deepEqual(await takeNet(netSub, bodies.length), want);
    }
    netSub.close();
  } finally {
    for (const m of [...ours, quic]) m.close(0, "");
    net.close();
  }
});

function token(key: TestKey, claims: TokenClaims): Promise<string> {
  return signToken(key.privateJwk, claims, { ttlSeconds: 600 });
}

Deno.test("WebSocket admission on the funnel's listener: 401, 403, 400 before the upgrade", async () => {
  using _q = quiet();
  const key = await makeKey();
  const verifier = await createVerifier(new MemoryKeySource(await keySetOf(key)));
  await using f = await startLiveFunnel({ CORS_ALLOWED_ORIGINS: "https://app.example" }, {
    verifier,
  });
  const c = await testCertificate();
  const poster = await token(key, { scopes: [{ actions: ["post"], broadcast: { prefix: "r" } }] });
  const reader = await token(key, {
    scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
  });
  const offer = { "Sec-WebSocket-Protocol": "qmux-02.moq-lite-05" };
  const cases: [string, Record<string, string>, number][] = [
    ["/", offer, 401],
    ["/?jwt=x.y.z", offer, 401],
    [`/?jwt=${poster}`, offer, 403],
    [`/?jwt=${reader}`, { ...offer, Origin: "https://evil.example" }, 403],
    [`/?jwt=${reader}`, { "Sec-WebSocket-Protocol": "qmux-02" }, 400],
    [`/?jwt=${reader}`, { ...offer, Origin: "https://app.example" }, 101],
  ];
  for (const [path, headers, status] of cases) {
    assert.equal(
      await upgradeStatus(f.moqPort, c.certPem, path, headers),
      status,
      `${path} ${JSON.stringify(headers)}`,
    );
  }
  // A plain HTTPS request on the listener's TCP port is not for it.
  const http = Deno.createHttpClient({ caCerts: [c.certPem] });
  const res = await fetch(`https://localhost:${f.moqPort}/`, { client: http });
  assert.equal(res.status, 404);
  await res.body?.cancel();
  http.close();
  const ok = await dialOurs(f.moqPort, { webSocket: ["qmux-02"], jwt: reader });
  ok.close(0, "");
});
