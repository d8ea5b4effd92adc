// Who may read /routes, /metrics and /debug/pprof (every session's address,
// path and track): at the defaults only loopback clients of the public port;
// with RELAY_METRICS_ADDR only that listener. /health stays open and says
// nothing but ok or starting.
import assert from "node:assert/strict";
import { generateDevCertificate } from "../../../src/certs/mod.ts";
import { startRelay } from "../../../src/relay/mod.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay } from "../../support/test_relay.ts";

/** This host's first non-loopback IPv4 address, or undefined when it has none. */
function outsideAddress(): string | undefined {
  return Deno.networkInterfaces().find((i) => i.family === "IPv4" && !i.address.startsWith("127."))
    ?.address;
}

const ip = outsideAddress();

Deno.test({
  name:
    "a client that is not on loopback gets 403 from /routes and /metrics, and /health still answers",
  ignore: ip === undefined,
  fn: async () => {
    using _q = quiet();
    // A request to this host's own outside address comes from that address, not from loopback.
    const cert = await generateDevCertificate({ hosts: [ip!] });
    const relay = await startRelay({
      hostname: ip!,
      port: 0,
      tls: { certPem: cert.certPem, keyPem: cert.keyPem },
      groupCacheSize: 8,
      pprof: true,
      corsAllowedOrigins: "*",
      verifier: undefined,
      log: () => {},
    });
    const client = Deno.createHttpClient({ caCerts: [cert.certPem] });
    try {
      const at = `https://${ip}:${relay.addr.port}`;
      for (const path of ["/routes", "/metrics", "/debug/pprof/heap"]) {
        const r = await fetch(`${at}${path}`, { client });
        const body = await r.text();
        assert.equal(r.status, 403, `${path}: ${body.slice(0, 200)}`);
        assert.match(body, /loopback clients; set RELAY_METRICS_ADDR/);
        assert.doesNotMatch(body, /sluice_relay_|remote=/);
      }
      const health = await fetch(`${at}/health`, { client });
      assert.equal(health.status, 200);
      assert.equal(await health.text(), "ok\n");
    } finally {
      client.close();
      await relay.stop();
    }
  },
});
if (ip === undefined) {
  console.warn("skipped: this host has no non-loopback IPv4 address to test from");
}

Deno.test("at the defaults a loopback client reads /routes and /metrics on the public port", async () => {
  using _q = quiet();
  const t = await startTestRelay({ shippedTimings: true });
  try {
    const metrics = await t.get("/metrics");
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /sluice_relay_sessions_active/);
    const routes = await t.get("/routes");
    assert.equal(routes.status, 200);
    assert.deepEqual((await routes.json()).paths, []);
  } finally {
    await t.stop();
  }
});

Deno.test("with RELAY_METRICS_ADDR the operations endpoints are served there only", async () => {
  using _q = quiet();
  const t = await startTestRelay({ extra: { metricsAddr: { hostname: "127.0.0.1", port: 0 } } });
  try {
    for (const path of ["/routes", "/metrics"]) {
      const r = await t.get(path);
      assert.equal(r.status, 404, `${path} on the public port`);
      await r.body?.cancel();
    }
    assert.equal((await t.get("/health")).status, 200);
    const ops = `http://127.0.0.1:${t.relay.metricsAddr!.port}`;
    const metrics = await fetch(`${ops}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /sluice_relay_sessions_active/);
    const routes = await fetch(`${ops}/routes`);
    assert.equal(routes.status, 200);
    assert.deepEqual((await routes.json()).paths, []);
  } finally {
    await t.stop();
  }
});
