import assert from "node:assert/strict";
import { ConfigError } from "../../src/config/errors.ts";
import { APPLIED_V8_FLAGS_VARIABLE, resolveGc } from "../../src/config/gc.ts";
import { loadRelayConfig, relayExposureWarning } from "../../src/config/relay.ts";

Deno.test("defaults carry the default source", () => {
  const c = loadRelayConfig({});
  // Auth off: every session is admitted, so the default is loopback only.
  assert.deepEqual(c.addr.value, { hostname: "127.0.0.1", port: 4433 });
  assert.equal(relayExposureWarning(c), undefined);
  assert.equal(c.addr.source, "default");
  assert.equal(c.groupCacheSize.value, 8);
  assert.equal(c.groupCacheMs.value, 10_000);
  assert.equal(c.groupCacheBytes.value, 32 * 1024 * 1024);
  assert.equal(c.pprof.value, false);
  assert.equal(c.corsAllowedOrigins.value, "*");
  assert.equal(c.authKeys.value, undefined);
  assert.equal(c.certFile.value, "certs/server.crt");
  assert.equal(c.gc.semiSpace.source, "runtime default");
  assert.deepEqual(c.gc.apply, []);
});

Deno.test("with a key set RELAY_ADDR defaults to every interface; auth off beyond loopback warns", () => {
  const on = loadRelayConfig({ SLUICE_AUTH_KEYS: "/etc/sluice/keys.json" });
  // The empty host of `:4433`: every interface, bound as `::` (IPv6 and IPv4) or 0.0.0.0.
  assert.deepEqual(on.addr.value, { hostname: "", port: 4433 });
  assert.equal(relayExposureWarning(on), undefined);
  const open = loadRelayConfig({ RELAY_ADDR: ":4433" });
  assert.deepEqual(open.addr.value, { hostname: "", port: 4433 });
  assert.match(relayExposureWarning(open) ?? "", /WARNING: .*RELAY_ADDR=:4433 reaches beyond/);
  assert.equal(relayExposureWarning(loadRelayConfig({ RELAY_ADDR: "[::1]:4433" })), undefined);
});

// Parsing is what this test checks, so it sets every value; the defaults test above is its twin.
Deno.test("environment values are parsed and marked as environment", () => {
  const c = loadRelayConfig({
    RELAY_ADDR: "127.0.0.1:0",
    GROUP_CACHE_SIZE: "3",
    RELAY_CACHE_MS: "0",
    RELAY_CACHE_BYTES: "1048576",
    RELAY_PPROF: "1",
    CORS_ALLOWED_ORIGINS: "https://a.example, http://localhost:8080",
    SLUICE_AUTH_KEYS: "/etc/keys.json",
  });
  assert.deepEqual(c.addr.value, { hostname: "127.0.0.1", port: 0 });
  assert.equal(c.addr.source, "environment");
  assert.equal(c.groupCacheSize.value, 3);
  assert.equal(c.groupCacheMs.value, 0);
  assert.equal(c.groupCacheBytes.value, 1048576);
  assert.equal(c.pprof.value, true);
  assert.deepEqual(c.corsAllowedOrigins.value, ["https://a.example", "http://localhost:8080"]);
  assert.equal(c.authKeys.value, "/etc/keys.json");
  assert.deepEqual(loadRelayConfig({ RELAY_ADDR: "[::1]:4433" }).addr.value, {
    hostname: "::1",
    port: 4433,
  });
});

Deno.test("invalid values are refused with a message naming the variable", () => {
  const cases: [string, string][] = [
    ["RELAY_ADDR", "4433"],
    ["RELAY_ADDR", ":99999"],
    ["GROUP_CACHE_SIZE", "0"],
    ["GROUP_CACHE_SIZE", "eight"],
    ["RELAY_CACHE_MS", "-1"],
    ["RELAY_CACHE_BYTES", "1000"],
    ["RELAY_PPROF", "maybe"],
    ["CORS_ALLOWED_ORIGINS", "a.example"],
    ["RELAY_SEMI_SPACE_MB", "-4"],
    ["SLUICE_AUTH_KEYS", "ftp://x/keys"],
  ];
  for (const [k, v] of cases) {
    assert.throws(() => loadRelayConfig({ [k]: v }), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.variable, k);
      assert.match(e.message, new RegExp(k));
      assert.ok(e.message.includes(`"${v}"`));
      return true;
    });
  }
});

Deno.test("the runtime's V8 flags always win over RELAY_SEMI_SPACE_MB", () => {
  const relayOnly = resolveGc({ RELAY_SEMI_SPACE_MB: "64" });
  assert.deepEqual(relayOnly.semiSpace, { mb: 64, source: "RELAY_SEMI_SPACE_MB" });
  assert.deepEqual(relayOnly.apply, ["--max-semi-space-size=64"]);

  const env = resolveGc({ RELAY_SEMI_SPACE_MB: "64", DENO_V8_FLAGS: "--max_semi_space_size=16" });
  assert.deepEqual(env.semiSpace, { mb: 16, source: "DENO_V8_FLAGS" });
  assert.deepEqual(env.apply, []);
  assert.match(env.why, /ignored/);

  const cli = resolveGc(
    { DENO_V8_FLAGS: "--max-semi-space-size=16,--max-old-space-size=900" },
    "--max-semi-space-size=8",
  );
  assert.deepEqual(cli.semiSpace, { mb: 8, source: "--v8-flags" });
  assert.deepEqual(cli.heapCeiling, { mb: 900, source: "DENO_V8_FLAGS" });
});

Deno.test("a re-executed relay reports the operator's inputs and does not apply twice", () => {
  const gc = resolveGc({
    RELAY_SEMI_SPACE_MB: "64",
    DENO_V8_FLAGS: "--max-old-space-size=900,--max-semi-space-size=64",
    [APPLIED_V8_FLAGS_VARIABLE]: "--max-semi-space-size=64",
  });
  assert.equal(gc.applied, true);
  assert.equal(gc.inputs.denoV8Flags, "--max-old-space-size=900");
  assert.deepEqual(gc.semiSpace, { mb: 64, source: "RELAY_SEMI_SPACE_MB" });
  assert.deepEqual(gc.apply, []);
});

Deno.test("every bad relay variable is named in one error", () => {
  assert.throws(
    () =>
      loadRelayConfig({
        RELAY_ADDR: "4433",
        GROUP_CACHE_SIZE: "eight",
        RELAY_PPROF: "maybe",
        RELAY_SEMI_SPACE_MB: "-4",
      }),
    (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.deepEqual(e.details.map((d) => d.variable).sort(), [
        "GROUP_CACHE_SIZE",
        "RELAY_ADDR",
        "RELAY_PPROF",
        "RELAY_SEMI_SPACE_MB",
      ]);
      assert.ok(e.problems.includes('RELAY_PPROF: must be 1 or 0 (true or false), got "maybe"'));
      return true;
    },
  );
});

Deno.test("mesh settings: PEERS entries, the relay's name, the GOAWAY redirect", () => {
  const c = loadRelayConfig({
    PEERS:
      "relay-a.example:4433, 10.0.0.7:4433,[::1]:5000, relay-a.example:4433, wss://relay-c.example:443",
    RELAY_NAME: "edge-1",
    PEER_CA_FILE: "/etc/sluice/peers.pem",
    GOAWAY_REDIRECT_URI: "moqt://relay-b.example:4433/",
  });
  assert.deepEqual(c.mesh.peers.value, [
    { host: "relay-a.example", port: 4433 },
    { host: "10.0.0.7", port: 4433 },
    { host: "::1", port: 5000 },
    { host: "relay-c.example", port: 443, scheme: "wss" },
  ]);
  assert.equal(
    c.mesh.peers.display,
    "relay-a.example:4433,10.0.0.7:4433,[::1]:5000,wss://relay-c.example:443",
  );
  assert.equal(c.mesh.name.value, "edge-1");
  assert.equal(c.mesh.peerCaFile.value, "/etc/sluice/peers.pem");
  assert.equal(c.mesh.goawayRedirectUri.value, "moqt://relay-b.example:4433/");
  const d = loadRelayConfig({});
  assert.deepEqual(d.mesh.peers.value, []);
  assert.match(d.mesh.name.value, /^relay(-.+)?$/);
  assert.equal(d.mesh.goawayRedirectUri.value, undefined);
});

Deno.test("mesh settings that cannot work are refused, naming the variables", () => {
  const refused = (env: Record<string, string>, variable: string, text: RegExp) => {
    assert.throws(() => loadRelayConfig(env), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      const problem = e.details.find((d) => d.variable === variable);
      assert.ok(problem, e.message);
      assert.match(problem.message, text);
      return true;
    });
  };
  refused({ PEERS: "relay-b" }, "PEERS", /"relay-b" is not host:port/);
  refused({ PEERS: "relay-b:0" }, "PEERS", /port 1\.\.65535/);
  refused({ RELAY_NAME: "has space" }, "RELAY_NAME", /"has space"/);
  refused(
    { GOAWAY_REDIRECT_URI: "http://b:443/" },
    "GOAWAY_REDIRECT_URI",
    /moqt:\/\/, https:\/\/ or wss:\/\//,
  );
  refused({ PEERS: "https://relay-b:4433" }, "PEERS", /wss:\/\/host:port/);
  refused({ GOAWAY_REDIRECT_URI: "b:4433" }, "GOAWAY_REDIRECT_URI", /"b:4433"/);
  // Credentials on, peers to dial, nothing to sign the peer credential with.
  refused(
    { PEERS: "relay-b:4433", SLUICE_AUTH_KEYS: "/etc/keys.json" },
    "RELAY_PEER_KEY",
    /PEERS.*SLUICE_AUTH_KEYS/,
  );
  // Every problem is reported at once.
  assert.throws(
    () => loadRelayConfig({ PEERS: "x", RELAY_NAME: "a b", GROUP_CACHE_SIZE: "0" }),
    (e: unknown) => e instanceof ConfigError && e.details.length === 3,
  );
  // Auth off: peering without a key is allowed (with a warning at start).
  assert.equal(loadRelayConfig({ PEERS: "relay-b:4433" }).mesh.peerKey.value, undefined);
});

Deno.test("RELAY_DATAGRAM_TRACKS: off by default, a list of prefix/track patterns when set", () => {
  const off = loadRelayConfig({});
  assert.ok(off.datagramTracks.value.empty);
  assert.equal(off.datagramTracks.source, "default");
  const c = loadRelayConfig({ RELAY_DATAGRAM_TRACKS: " room/chat , sensors/* , alerts" });
  const p = c.datagramTracks.value;
  assert.equal(c.datagramTracks.display, "room/chat,sensors/*,alerts");
  assert.ok(p.matches("room/1", "chat"));
  assert.ok(p.matches("room", "chat"));
  assert.ok(!p.matches("roomy/1", "chat"), "the prefix is segment-aware");
  assert.ok(!p.matches("room/1", "video"));
  assert.ok(p.matches("sensors/a/b", "temperature"));
  assert.ok(p.matches("anywhere/at/all", "alerts"));
});

Deno.test("a bad RELAY_DATAGRAM_TRACKS is refused with a message quoting the entry", () => {
  const cases: [string, RegExp][] = [
    ["room/chat,,x", /an entry is empty/],
    ["room/", /track name is empty/],
    ["*/chat", /broadcast prefix has a wildcard/],
    ["room/../chat", /broadcast prefix has a "\.\." segment/],
    ["/room/chat", /broadcast prefix starts with a slash/],
    ["room/ch\u0001at", /track name contains a control character/],
  ];
  for (const [text, message] of cases) {
    assert.throws(
      () => loadRelayConfig({ RELAY_DATAGRAM_TRACKS: text }),
      (e: unknown) =>
        e instanceof ConfigError && e.variable === "RELAY_DATAGRAM_TRACKS" &&
        message.test(e.message),
      text,
    );
  }
});

Deno.test("RELAY_DELIVERY_TURN_MS: 5 ms by default, 0 turns it off, anything else is refused", () => {
  const d = loadRelayConfig({});
  assert.equal(d.deliveryTurnMs.value, 5);
  assert.equal(d.deliveryTurnMs.source, "default");
  const off = loadRelayConfig({ RELAY_DELIVERY_TURN_MS: "0" });
  assert.equal(off.deliveryTurnMs.value, 0);
  assert.match(off.deliveryTurnMs.display, /off/);
  assert.equal(loadRelayConfig({ RELAY_DELIVERY_TURN_MS: "20" }).deliveryTurnMs.value, 20);
  for (const bad of ["-1", "2.5", "fast", "100000"]) {
    assert.throws(
      () => loadRelayConfig({ RELAY_DELIVERY_TURN_MS: bad }),
      (e: unknown) => e instanceof ConfigError && e.variable === "RELAY_DELIVERY_TURN_MS",
      bad,
    );
  }
});

Deno.test("RELAY_INCOMING_STREAMS: 1000 by default, 16..10000 taken, anything else refused", () => {
  const d = loadRelayConfig({});
  assert.equal(d.incomingStreams.value, 1000);
  assert.equal(d.incomingStreams.source, "default");
  const edge = loadRelayConfig({ RELAY_INCOMING_STREAMS: "100" });
  assert.equal(edge.incomingStreams.value, 100);
  assert.equal(edge.incomingStreams.source, "environment");
  assert.match(edge.incomingStreams.display, /^100 streams per connection/);
  assert.equal(loadRelayConfig({ RELAY_INCOMING_STREAMS: "16" }).incomingStreams.value, 16);
  assert.equal(loadRelayConfig({ RELAY_INCOMING_STREAMS: "10000" }).incomingStreams.value, 10_000);
  for (const bad of ["0", "15", "10001", "-100", "1e3", "100.5", "many"]) {
    assert.throws(
      () => loadRelayConfig({ RELAY_INCOMING_STREAMS: bad }),
      (e: unknown) =>
        e instanceof ConfigError && e.variable === "RELAY_INCOMING_STREAMS" &&
        e.message.includes("between 16 and 10000") && e.message.includes(`"${bad}"`),
      bad,
    );
  }
});

Deno.test("RELAY_METRICS_ADDR: unset by default (loopback clients of RELAY_ADDR), a listen address when set", () => {
  const d = loadRelayConfig({});
  assert.equal(d.metricsAddr.value, undefined);
  assert.match(d.metricsAddr.display, /loopback clients only/);
  const set = loadRelayConfig({ RELAY_METRICS_ADDR: "127.0.0.1:9464" });
  assert.deepEqual(set.metricsAddr.value, { hostname: "127.0.0.1", port: 9464 });
  assert.throws(
    () => loadRelayConfig({ RELAY_METRICS_ADDR: "nope" }),
    (e: unknown) => e instanceof ConfigError && e.variable === "RELAY_METRICS_ADDR",
  );
});

Deno.test("SLUICE_AUTH_AUDIENCE and SLUICE_AUTH_ISSUER: unset by default, any non-empty text when set", () => {
  const d = loadRelayConfig({});
  assert.equal(d.authAudience.value, undefined);
  assert.equal(d.authIssuer.value, undefined);
  const set = loadRelayConfig({
    SLUICE_AUTH_AUDIENCE: "relay.example",
    SLUICE_AUTH_ISSUER: "auth",
  });
  assert.equal(set.authAudience.value, "relay.example");
  assert.equal(set.authIssuer.value, "auth");
  assert.equal(loadRelayConfig({ SLUICE_AUTH_AUDIENCE: " " }).authAudience.value, undefined);
});
