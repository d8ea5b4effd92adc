import assert from "node:assert/strict";
import { ConfigError } from "../../src/config/errors.ts";
import { funnelExposureWarning, loadFunnelConfig } from "../../src/config/funnel.ts";

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadFunnelConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return [...error.problems];
  }
  assert.fail("expected a ConfigError");
}

Deno.test("Defaults: 127.0.0.1:8090 ingest, memory ledger, own listener on 127.0.0.1:4433, auth off", () => {
  const config = loadFunnelConfig({});
  // Auth off: anonymous clients may post, redact and delete, so the defaults are loopback only.
  assert.deepEqual(config.ingest, { hostname: "127.0.0.1", port: 8090 });
  assert.deepEqual(config.serve, { hostname: "127.0.0.1", port: 4433 });
  assert.deepEqual(config.ledger, { kind: "memory" });
  assert.equal(config.relay, undefined);
  assert.equal(config.auth, undefined);
  assert.equal(config.certFile, "certs/server.crt");
  assert.equal(config.senderLimit, undefined);
  assert.equal(funnelExposureWarning(config), undefined);
});

Deno.test("With a key set the default addresses are every interface, and draw no warning", () => {
  const config = loadFunnelConfig({ SLUICE_AUTH_KEYS: "/etc/sluice/keys.json" });
  // `:port`, every interface: an empty host, bound as `::` (IPv6 and IPv4) or 0.0.0.0.
  assert.deepEqual(config.ingest, { hostname: "", port: 8090 });
  assert.deepEqual(config.serve, { hostname: "", port: 4433 });
  assert.equal(funnelExposureWarning(config), undefined);
});

Deno.test("Auth off on an explicit address beyond loopback is allowed, with a warning naming it", () => {
  const open = loadFunnelConfig({ FUNNEL_ADDR: ":8090", FUNNEL_METRICS_ADDR: "10.0.0.5:9090" });
  assert.deepEqual(open.ingest, { hostname: "", port: 8090 });
  const warning = funnelExposureWarning(open) ?? "";
  assert.match(warning, /^WARNING: SLUICE_AUTH_KEYS is not set/);
  assert.match(warning, /FUNNEL_ADDR=:8090, FUNNEL_METRICS_ADDR=10\.0\.0\.5:9090 reaches beyond/);
  assert.doesNotMatch(warning, /FUNNEL_SERVE_ADDR/, "the default listener is loopback");
  for (const loopback of ["127.0.0.1:0", "[::1]:0", "localhost:0", "127.0.0.2:0"]) {
    const c = loadFunnelConfig({ FUNNEL_ADDR: loopback, FUNNEL_SERVE_ADDR: loopback });
    assert.equal(funnelExposureWarning(c), undefined, loopback);
  }
});

Deno.test("RELAY_URL turns the own listener off unless FUNNEL_SERVE_ADDR is set", () => {
  const viaRelay = loadFunnelConfig({ RELAY_URL: "https://relay.example:4433/?jwt=abc" });
  assert.equal(viaRelay.serve, undefined);
  assert.equal(viaRelay.relay?.url.protocol, "https:");
  const both = loadFunnelConfig({
    RELAY_URL: "moqt://relay.example:4433/",
    FUNNEL_SERVE_ADDR: "127.0.0.1:4444",
  });
  assert.deepEqual(both.serve, { hostname: "127.0.0.1", port: 4444 });
});

Deno.test("Every bad variable is named in one error", () => {
  const problems = problemsOf({
    FUNNEL_ADDR: "8090",
    FUNNEL_SENDER_LIMIT: "ten",
    FUNNEL_TRACK_LIMIT: "5,0",
    RELAY_URL: "http://relay.example",
    LEDGER_URI: "/var/lib/sluice",
    CORS_ALLOWED_ORIGINS: "https://ok.example,not an origin",
    RELAY_TLS_INSECURE: "maybe",
  });
  const named = problems.map((p) => p.split(":")[0]);
  assert.deepEqual(named.sort(), [
    "CORS_ALLOWED_ORIGINS",
    "FUNNEL_ADDR",
    "FUNNEL_SENDER_LIMIT",
    "FUNNEL_TRACK_LIMIT",
    "LEDGER_URI",
    "RELAY_TLS_INSECURE",
    "RELAY_URL",
  ]);
});

Deno.test("FUNNEL_DATAGRAM_TRACKS: none by default, track patterns when set, refused when bad", () => {
  assert.ok(loadFunnelConfig({}).datagramTracks.empty);
  const c = loadFunnelConfig({ FUNNEL_DATAGRAM_TRACKS: "rooms/cursor,presence" });
  assert.ok(c.datagramTracks.matches("rooms/7", "cursor"));
  assert.ok(c.datagramTracks.matches("lobby", "presence"));
  assert.ok(!c.datagramTracks.matches("rooms/7", "chat"));
  const problems = problemsOf({ FUNNEL_DATAGRAM_TRACKS: "rooms/*/cursor" });
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /^FUNNEL_DATAGRAM_TRACKS: .*"rooms\/\*\/cursor".*wildcard/);
});

Deno.test("RELAY_SIGNING_KEY and RELAY_PUBLISH go together", () => {
  const problems = problemsOf({ RELAY_URL: "moqt://r:1/", RELAY_SIGNING_KEY: "key.jwk" });
  assert.match(problems[0]!, /^RELAY_PUBLISH: .*together/);
  const config = loadFunnelConfig({
    RELAY_URL: "moqt://r:1/",
    RELAY_SIGNING_KEY: "key.jwk",
    RELAY_PUBLISH: "room",
  });
  assert.deepEqual(config.relay?.signing, { keyFile: "key.jwk", publish: "room" });
});

Deno.test("LEDGER_URI: every scheme of the spec parses; others are startup errors", () => {
  assert.deepEqual(loadFunnelConfig({ LEDGER_URI: "file:///var/lib/sluice" }).ledger, {
    kind: "directory",
    dir: "/var/lib/sluice",
  });
  assert.deepEqual(loadFunnelConfig({ LEDGER_URI: "file:data" }).ledger, {
    kind: "directory",
    dir: "data",
  });
  const pg = loadFunnelConfig({ LEDGER_URI: "postgres://app@db:5432/ledger?table=records" });
  assert.equal(pg.ledger.kind, "postgres");
  assert.equal(pg.ledger.kind === "postgres" && pg.ledger.table, "records");
  assert.match(
    problemsOf({ LEDGER_URI: "postgres://db/x?table=a;drop" })[0]!,
    /^LEDGER_URI: table/,
  );
  const s3 = loadFunnelConfig({
    LEDGER_URI: "s3://bucket/pre/fix?region=eu-west-1&endpoint=http://127.0.0.1:9000",
    AWS_ACCESS_KEY_ID: "id",
    AWS_SECRET_ACCESS_KEY: "secret",
  });
  assert.deepEqual(s3.ledger, {
    kind: "s3",
    bucket: "bucket",
    prefix: "pre/fix",
    region: "eu-west-1",
    endpoint: "http://127.0.0.1:9000",
  });
  assert.match(problemsOf({ LEDGER_URI: "s3://bucket/x" })[0]!, /AWS_ACCESS_KEY_ID/);
  assert.match(problemsOf({ LEDGER_URI: "redis://x" })[0]!, /^LEDGER_URI: Unsupported scheme/);
  assert.match(problemsOf({ LEDGER_URI: "data/dir" })[0]!, /^LEDGER_URI: .*bare path/);
  assert.deepEqual(loadFunnelConfig({ LEDGER_URI: "" }).ledger, { kind: "memory" });
});

Deno.test("FUNNEL_PUBLIC_URL: unset by default, one http(s) origin when set, refused otherwise", () => {
  assert.equal(loadFunnelConfig({}).publicOrigin, undefined);
  const c = loadFunnelConfig({ FUNNEL_PUBLIC_URL: "https://funnel.example/" });
  assert.equal(c.publicOrigin, "https://funnel.example");
  for (const bad of ["funnel.example", "https://a.example,https://b.example", "*", "ftp://x"]) {
    const problems = problemsOf({ FUNNEL_PUBLIC_URL: bad });
    assert.equal(problems.length, 1, bad);
    assert.match(problems[0]!, /^FUNNEL_PUBLIC_URL: /);
  }
  assert.equal(problemsOf({ FUNNEL_PUBLIC_URL: "https://funnel.example/path" }).length, 1);
});

Deno.test("RELAY_VERSION picks moq-lite (the default) or an IETF draft by its token", () => {
  assert.equal(loadFunnelConfig({ RELAY_URL: "moqt://r:1/" }).relay?.ietf, undefined);
  const lite = loadFunnelConfig({ RELAY_URL: "moqt://r:1/", RELAY_VERSION: "moq-lite" });
  assert.equal(lite.relay?.ietf, undefined);
  for (const [token, draft] of [["moqt-20", 20], ["moqt-16", 16], ["moq-00", 14]] as const) {
    const c = loadFunnelConfig({ RELAY_URL: "moqt://r:1/", RELAY_VERSION: token });
    assert.equal(c.relay?.ietf, draft);
  }
  assert.equal(
    loadFunnelConfig({ RELAY_URL: "https://r:1/", RELAY_VERSION: "moqt-20" }).relay?.ietf,
    20,
  );
  assert.match(
    problemsOf({ RELAY_URL: "moqt://r:1/", RELAY_VERSION: "moqt-17" })[0]!,
    /^RELAY_VERSION: .*moq-lite, moqt-20, moqt-16, moq-00/,
  );
  assert.match(
    problemsOf({ RELAY_URL: "https://r:1/", RELAY_VERSION: "moq-00" })[0]!,
    /^RELAY_VERSION: .*native QUIC only/,
  );
  assert.match(problemsOf({ RELAY_VERSION: "moqt-20" })[0]!, /^RELAY_VERSION: .*without RELAY_URL/);
});
