// Test helper: a relay on port 0 with the test certificate (clients dial it with
// ./moq.ts).
import {
  createVerifier,
  MemoryKeySource,
  signToken,
  type TokenClaims,
  type Verifier,
} from "../../src/auth/mod.ts";
import { type RelayOptions, type RunningRelay, startRelay } from "../../src/relay/mod.ts";
import { keySetOf, makeKey, type TestKey } from "./credentials.ts";
import { testCertificate } from "./certs.ts";

/** A relay under test plus what tests need to reach it. */
export interface TestRelay {
  relay: RunningRelay;
  port: number;
  logs: string[];
  http: Deno.HttpClient;
  /** GETs a relay HTTP path. */
  get(path: string): Promise<Response>;
  /** Signs a credential accepted by this relay (auth on only). */
  token(claims: TokenClaims, ttlSeconds?: number): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a relay on 127.0.0.1:0; `auth` turns on a key set with one fresh key. */
export async function startTestRelay(
  options: {
    auth?: boolean;
    cacheSize?: number;
    rttIntervalMs?: number;
    pprof?: boolean;
    /** More relay options (peers, name, GOAWAY redirect...); peers' TLS trusts the test certificate. */
    extra?: Partial<RelayOptions>;
    /** CORS_ALLOWED_ORIGINS (default https://app.example). */
    cors?: readonly string[] | "*";
    /**
     * Keep the relay's shipped timings (upstream idle 5 s, orphan wait 2 s, RTT pings every 10 s)
     * instead of the short ones that let most tests end quickly: for tests of a promise made at
     * defaults, such as "every acknowledged record is delivered".
     */
    shippedTimings?: boolean;
  } = {},
): Promise<TestRelay> {
  const c = await testCertificate();
  let key: TestKey | undefined;
  let verifier: Verifier | undefined;
  if (options.auth) {
    key = await makeKey();
    verifier = await createVerifier(new MemoryKeySource(await keySetOf(key)));
  }
  const logs: string[] = [];
  let relay: RunningRelay | undefined;
  // UDP port 0 then the same TCP port: retry in the rare case that TCP port is taken.
  for (let attempt = 0; relay === undefined; attempt++) {
    try {
      relay = await startRelay({
        hostname: "127.0.0.1",
        port: 0,
        tls: { certPem: c.certPem, keyPem: c.keyPem },
        groupCacheSize: options.cacheSize ?? 8,
        pprof: options.pprof ?? false,
        corsAllowedOrigins: options.cors ?? ["https://app.example"],
        verifier,
        log: (l) => logs.push(l),
        // Short timings so tests that end a route or a subscription need not wait for the defaults
        // (upstream idle 200 ms, orphan wait 200 ms, no RTT pings). The promises made at the
        // defaults are tested with `shippedTimings`: tests/funnel/live/publisher_outage_test.ts,
        // tests/funnel/live/lossy_link_test.ts, tests/relay/routing/gap_repair_quic_test.ts.
        ...(options.shippedTimings ? {} : {
          rttIntervalMs: options.rttIntervalMs ?? 0,
          idleMs: 200,
          orphanMs: 200,
        }),
        peerCaCerts: [c.certPem],
        ...options.extra,
      });
    } catch (e) {
      if (!(e instanceof Deno.errors.AddrInUse) || attempt > 5) throw e;
    }
  }
  const http = Deno.createHttpClient({ caCerts: [c.certPem] });
  const port = relay.addr.port;
  const r = relay;
  return {
    relay: r,
    port,
    logs,
    http,
    get: (path) => fetch(`https://localhost:${port}${path}`, { client: http }),
    token: (claims, ttlSeconds = 600) => {
      if (!key) throw new TypeError("auth is off");
      return signToken(key.privateJwk, claims, { ttlSeconds });
    },
    stop: async () => {
      await r.stop();
      verifier?.close();
      http.close();
    },
  };
}
