// Relay admission and authorization over real sessions (auth on and off).
import assert from "node:assert/strict";
import { connect, MoqError, TrackProducer, VERSIONS } from "../../../src/moq/mod.ts";
import { connectWebTransport, WebTransportRefusedError } from "../../../src/transport/mod.ts";
import { families, sampleValue } from "../../support/prometheus.ts";
import { testCertificate } from "../../support/certs.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { until } from "../../support/wait.ts";
import { startTestRelay } from "../../support/test_relay.ts";

const enc = new TextEncoder();

async function wt(port: number, pathAndQuery: string, origin?: string) {
  const c = await testCertificate();
  return connectWebTransport(new URL(`https://localhost:${port}${pathAndQuery}`), {
    protocols: VERSIONS,
    serverCertificateHashes: [c.sha256],
    ...(origin ? { origin } : {}),
  });
}

Deno.test("auth off: every session is admitted and a warning is logged", async () => {
  using _q = quiet();
  const t = await startTestRelay();
  assert.ok(t.logs.some((l) => /WARNING: SLUICE_AUTH_KEYS is not set/.test(l)));
  const s = await wt(t.port, "/");
  const moq = await connect(s);
  moq.close(0, "");
  await t.stop();
});

Deno.test("auth on: native QUIC without a valid credential is closed with the unauthorized code", async () => {
  using _q = quiet();
  const t = await startTestRelay({ auth: true });
  for (const jwt of [undefined, "not.a.jwt"]) {
    const moq = await dialOurs(t.port, jwt === undefined ? {} : { jwt });
    const info = await moq.closed;
    assert.equal(info.code, 6, `closed with code 6 (jwt ${jwt})`);
  }
  const f = families(await (await t.get("/metrics")).text());
  assert.equal(sampleValue(f, "sluice_relay_sessions_active"), 0);
  await t.stop();
});

Deno.test("auth on: WebTransport is refused 401/403 before acceptance", async () => {
  using _q = quiet();
  const t = await startTestRelay({ auth: true });
  const roomOnly = await t.token({
    scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
  });
  const cases: [string, number, string?][] = [
    ["/", 401],
    ["/?jwt=garbage", 401],
    [`/secret?jwt=${roomOnly}`, 403],
    [`/?jwt=${roomOnly}`, 403, "https://evil.example"],
  ];
  for (const [path, status, origin] of cases) {
    await assert.rejects(
      wt(t.port, path, origin),
      (e: unknown) => e instanceof WebTransportRefusedError && e.status === status,
      `${path} ${origin ?? ""} → ${status}`,
    );
  }
  const ok = await wt(t.port, `/room?jwt=${roomOnly}`, "https://app.example");
  const moq = await connect(ok);
  moq.close(0, "");
  await t.stop();
});

Deno.test("auth on: announcing needs publish, subscribing needs subscribe on the track", async () => {
  using _q = quiet();
  const t = await startTestRelay({ auth: true });
  const pubToken = await t.token({
    scopes: [{ actions: ["publish"], broadcast: { exact: "room/ok" } }],
  });
  const subToken = await t.token({
    scopes: [{ actions: ["subscribe"], broadcast: { exact: "room/ok" }, track: { exact: "chat" } }],
  });
  const producer = new TrackProducer({ cache: 8 });
  const pub = await dialOurs(t.port, {
    jwt: pubToken,
    moq: { serve: () => producer },
  });
  // Refused first, then allowed: the relay handles them in order on one announce stream.
  pub.announce("room/forbidden");
  pub.announce("room/ok");
  await until(async () => (await (await t.get("/routes")).json()).paths.length > 0, "route");
  const routes = await (await t.get("/routes")).json();
  assert.deepEqual(routes.paths.map((p: { path: string }) => p.path), ["/room/ok"]);

  const sub = await dialOurs(t.port, { jwt: subToken });
  await seeAnnounced(sub, "room/ok");
  const refused = sub.subscribe("room/ok", "secret");
  await assert.rejects(refused.ready, (e: unknown) => e instanceof MoqError);
  const allowed = sub.subscribe("room/ok", "chat");
  await allowed.ready;
  producer.writeGroup(1, enc.encode("hi"));
  const first = await allowed[Symbol.asyncIterator]().next();
  assert.equal(first.value?.sequence, 1);

  // A subscriber's credential cannot announce: the relay does not even ask that session
  // for announcements, so nothing it offers becomes a route.
  const sneaky = await dialOurs(t.port, {
    jwt: subToken,
    moq: { serve: () => producer },
  });
  sneaky.announce("room/ok2");
  const probe = sneaky.subscribe("room/ok", "chat"); // a round trip on the same session
  await probe.ready;
  probe.close();
  const rejected = async () =>
    sampleValue(
      families(await (await t.get("/metrics")).text()),
      "sluice_relay_route_rejections_total",
      { reason: "unauthorized" },
    );
  await until(async () => (await rejected()) === 1, "the publisher's forbidden announcement");
  const f = families(await (await t.get("/metrics")).text());
  assert.equal(sampleValue(f, "sluice_relay_subscribe_errors_total", { code: "unauthorized" }), 1);
  assert.equal(sampleValue(f, "sluice_relay_broadcasts_active"), 1);
  const after = await (await t.get("/routes")).json();
  assert.deepEqual(after.paths.map((p: { path: string }) => p.path), ["/room/ok"]);
  for (const s of [pub, sub, sneaky]) s.close(0, "");
  await t.stop();
});

Deno.test("auth on: a session ends when its credential expires, counted as reason expired", async () => {
  using _q = quiet();
  const t = await startTestRelay({ auth: true });
  // A credential that lasts two seconds: admitted now, ended by the relay at its exp.
  const jwt = await t.token({ scopes: [{ actions: ["subscribe"], broadcast: { prefix: "" } }] }, 2);
  const moq = await dialOurs(t.port, { jwt });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const info = await Promise.race([
    moq.closed,
    new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), 15_000))),
  ]);
  clearTimeout(timer);
  if (!info) moq.close(0, "");
  assert.ok(info, "the relay ended the session");
  assert.equal(info.code, 6);
  assert.equal(info.reason, "credential expired");
  await until(async () => {
    const f = families(await (await t.get("/metrics")).text());
    return sampleValue(f, "sluice_relay_sessions_closed_total", {
      transport: "quic",
      class: "client",
      reason: "expired",
    }) === 1;
  }, "the expired session to be counted");
  await t.stop();
});

Deno.test("auth on: a flood of refused sessions is logged at a bounded rate, and each is still refused", async () => {
  using _q = quiet();
  const t = await startTestRelay({ auth: true });
  const before = t.logs.length;
  const sessions = 60;
  await Promise.all(Array.from({ length: sessions }, async () => {
    const moq = await dialOurs(t.port);
    assert.equal((await moq.closed).code, 6);
  }));
  const lines = t.logs.slice(before).filter((l) => l.includes("refused"));
  // One line per refusal until the burst (20) is spent; then about two a second.
  assert.ok(lines.length >= 20, `only ${lines.length} lines`);
  assert.ok(lines.length < sessions / 2, `${lines.length} lines for ${sessions} refused sessions`);
  await t.stop();
});
