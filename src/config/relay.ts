/**
 * The relay's configuration: every setting parsed from the environment once,
 * validated with messages naming the variable, and kept with its source so
 * `sluice doctor` can say where each value came from. The same resolution
 * feeds relay startup, so the two cannot disagree.
 *
 * @module
 */
import { parseOriginList } from "./origins.ts";
import { parseTrackPatterns, TrackPatterns } from "../path/mod.ts";
import { type Env, EnvReader, type Setting } from "./env.ts";
import { type GcResolution, readGc } from "./gc.ts";
import { type MeshSettings, readMeshSettings } from "./relay_mesh.ts";
import {
  describeListenAddress,
  type ListenAddress,
  parseBoolean,
  parseIntIn,
  parseListenAddress,
} from "./parse.ts";
import { anonymousExposureWarning, defaultListenAddress } from "./exposure.ts";

/** Everything the relay needs from its environment. */
export interface RelayConfig {
  /** RELAY_ADDR. */
  readonly addr: Setting<ListenAddress>;
  /** CERT_FILE. */
  readonly certFile: Setting<string>;
  /** KEY_FILE. */
  readonly keyFile: Setting<string>;
  /** SLUICE_AUTH_KEYS: file path or https URL of the key set; undefined admits every session. */
  readonly authKeys: Setting<string | undefined>;
  /** SLUICE_AUTH_KEYS_CACHE: where the last good remote key set is kept. */
  readonly authKeysCache: Setting<string | undefined>;
  /** SLUICE_RELAY_TOKEN: bearer token for fetching a remote key set (never displayed). */
  readonly relayToken: Setting<string | undefined>;
  /** SLUICE_AUTH_AUDIENCE: when set, credentials must name it in `aud` (and peer credentials do). */
  readonly authAudience: Setting<string | undefined>;
  /** SLUICE_AUTH_ISSUER: when set, credentials' `iss` must be it (and peer credentials carry it). */
  readonly authIssuer: Setting<string | undefined>;
  /** GROUP_CACHE_SIZE: groups kept per track. */
  readonly groupCacheSize: Setting<number>;
  /** RELAY_CACHE_MS: groups written longer ago than this are dropped from a track's cache; 0 = no age limit. */
  readonly groupCacheMs: Setting<number>;
  /** RELAY_CACHE_BYTES: payload bytes one track's cache holds at most. */
  readonly groupCacheBytes: Setting<number>;
  /** RELAY_PUBLISHER_GRACE_MS: how long subscribers of a broadcast that lost its publisher wait for it to come back. */
  readonly publisherGraceMs: Setting<number>;
  /** RELAY_PPROF: expose /debug/pprof/*. */
  readonly pprof: Setting<boolean>;
  /** RELAY_METRICS_ADDR: a plain-HTTP listener for /routes, /metrics, pprof; unset serves them to loopback clients on RELAY_ADDR. */
  readonly metricsAddr: Setting<ListenAddress | undefined>;
  /** CORS_ALLOWED_ORIGINS: browser origins allowed to open WebTransport and read HTTP; "*" = any. */
  readonly corsAllowedOrigins: Setting<readonly string[] | "*">;
  /** RELAY_DATAGRAM_TRACKS: tracks whose single-frame groups go to clients as QUIC datagrams. */
  readonly datagramTracks: Setting<TrackPatterns>;
  /** RELAY_DELIVERY_TURN_MS: delivery per turn under overload, ms; 0 = no turns. */
  readonly deliveryTurnMs: Setting<number>;
  /** RELAY_INCOMING_STREAMS: unidirectional streams a connection may have open toward the relay at once. */
  readonly incomingStreams: Setting<number>;
  /** The garbage-collector resolution. */
  readonly gc: GcResolution;
  /** PEERS, RELAY_PEER_KEY, PEER_CA_FILE, RELAY_NAME, GOAWAY_REDIRECT_URI. */
  readonly mesh: MeshSettings;
}

/** Defaults, for documentation and doctor. */
export const RELAY_DEFAULTS = {
  // With SLUICE_AUTH_KEYS; without it the default is 127.0.0.1:4433 (loopback only).
  RELAY_ADDR: ":4433",
  CERT_FILE: "certs/server.crt",
  KEY_FILE: "certs/server.key",
  GROUP_CACHE_SIZE: 8,
  // Several 2 s GOPs of a media track, and every group of a record track the count keeps.
  RELAY_CACHE_MS: 10_000,
  // 8 groups of a 2 s GOP at 16 Mbit/s; one hostile track cannot hold more.
  RELAY_CACHE_BYTES: 32 * 1024 * 1024,
  RELAY_PPROF: false,
  CORS_ALLOWED_ORIGINS: "*",
  RELAY_DELIVERY_TURN_MS: 5,
  // moq-lite opens a uni stream per group: a publisher, or a peer relay sending many tracks, may
  // have this many groups in flight toward the relay. The QUIC stack keeps state for every stream
  // it grants, so each session costs memory for it, opened or not (docs/relay.md, "Sessions per
  // node").
  RELAY_INCOMING_STREAMS: 1000,
  // A funnel's reconnect at its defaults, with room to spare: its idle timeout (1 s) notices a
  // silent link, it redials 2 s later, and a dial that times out costs a further 3 s.
  RELAY_PUBLISHER_GRACE_MS: 10_000,
} as const;

/** Options for {@link loadRelayConfig}. */
export interface LoadRelayConfigOptions {
  /** The runtime's `--v8-flags=` value (see `runtimeV8FlagsArgument` in `gc.ts`). */
  readonly cliV8Flags?: string;
}

function keySetLocation(text: string): string {
  if (
    /^[a-z][a-z0-9+.-]*:\/\//i.test(text) && !text.startsWith("https://") &&
    !text.startsWith("http://")
  ) {
    throw new TypeError(`must be a file path or an https URL, got "${text}"`);
  }
  return text;
}

/**
 * Parses and validates the relay's environment. Throws a `ConfigError`
 * listing every bad variable.
 *
 * @example
 * ```ts
 * const config = loadRelayConfig(Deno.env.toObject(), { cliV8Flags: runtimeV8FlagsArgument() });
 * ```
 */
export function loadRelayConfig(env: Env, options: LoadRelayConfigOptions = {}): RelayConfig {
  const r = new EnvReader(env);
  const text = (s: string): string => s;
  const show = (v: string | undefined): string => v ?? "(unset)";
  const authKeys = r.setting<string | undefined>(
    "SLUICE_AUTH_KEYS",
    undefined,
    keySetLocation,
    (v) => v ?? "(unset: every session is admitted)",
  );
  const config: RelayConfig = {
    addr: r.setting(
      "RELAY_ADDR",
      authKeys.value === undefined
        ? defaultListenAddress(4433, false)
        : parseListenAddress(RELAY_DEFAULTS.RELAY_ADDR),
      parseListenAddress,
      describeListenAddress,
    ),
    certFile: r.setting("CERT_FILE", RELAY_DEFAULTS.CERT_FILE, text),
    keyFile: r.setting("KEY_FILE", RELAY_DEFAULTS.KEY_FILE, text),
    authKeys,
    authKeysCache: r.setting<string | undefined>("SLUICE_AUTH_KEYS_CACHE", undefined, text, show),
    relayToken: r.setting<string | undefined>(
      "SLUICE_RELAY_TOKEN",
      undefined,
      text,
      (v) => (v === undefined ? "(unset)" : "(set, hidden)"),
    ),
    authAudience: r.setting<string | undefined>(
      "SLUICE_AUTH_AUDIENCE",
      undefined,
      text,
      (v) => v ?? "(unset: aud is not checked)",
    ),
    authIssuer: r.setting<string | undefined>(
      "SLUICE_AUTH_ISSUER",
      undefined,
      text,
      (v) => v ?? "(unset: iss is not checked)",
    ),
    groupCacheSize: r.setting(
      "GROUP_CACHE_SIZE",
      RELAY_DEFAULTS.GROUP_CACHE_SIZE,
      parseIntIn(1, 1024, " number of groups"),
    ),
    groupCacheMs: r.setting(
      "RELAY_CACHE_MS",
      RELAY_DEFAULTS.RELAY_CACHE_MS,
      parseIntIn(0, 3_600_000, " ms"),
      (v) => (v === 0 ? "0 (no age limit)" : `${v} ms`),
    ),
    groupCacheBytes: r.setting(
      "RELAY_CACHE_BYTES",
      RELAY_DEFAULTS.RELAY_CACHE_BYTES,
      parseIntIn(65_536, 2 ** 40, " bytes"),
    ),
    publisherGraceMs: r.setting(
      "RELAY_PUBLISHER_GRACE_MS",
      RELAY_DEFAULTS.RELAY_PUBLISHER_GRACE_MS,
      parseIntIn(0, 600_000, " ms"),
    ),
    pprof: r.setting(
      "RELAY_PPROF",
      RELAY_DEFAULTS.RELAY_PPROF,
      parseBoolean,
      (v) => (v ? "1 (profiling endpoints on)" : "0 (off)"),
    ),
    metricsAddr: r.setting<ListenAddress | undefined>(
      "RELAY_METRICS_ADDR",
      undefined,
      parseListenAddress,
      (v) =>
        v === undefined
          ? "(unset: /routes /metrics /debug/pprof on RELAY_ADDR, to loopback clients only)"
          : `${describeListenAddress(v)} (plain HTTP; RELAY_ADDR no longer serves them)`,
    ),
    corsAllowedOrigins: r.setting<readonly string[] | "*">(
      "CORS_ALLOWED_ORIGINS",
      RELAY_DEFAULTS.CORS_ALLOWED_ORIGINS,
      parseOriginList,
      (v) => (v === "*" ? "* (any origin)" : v.join(",")),
    ),
    datagramTracks: r.setting(
      "RELAY_DATAGRAM_TRACKS",
      new TrackPatterns([]),
      parseTrackPatterns,
      (v) => (v.empty ? "(unset: every group goes on a stream)" : v.toString()),
    ),
    deliveryTurnMs: r.setting(
      "RELAY_DELIVERY_TURN_MS",
      RELAY_DEFAULTS.RELAY_DELIVERY_TURN_MS,
      parseIntIn(0, 1000, " ms"),
      (v) => (v === 0 ? "0 (off: every subscription sends whenever it can)" : `${v} ms`),
    ),
    incomingStreams: r.setting(
      "RELAY_INCOMING_STREAMS",
      RELAY_DEFAULTS.RELAY_INCOMING_STREAMS,
      // Below 16 an HTTP/3 connection's own three streams (control, QPACK) leave too few for
      // groups; above 10,000 an idle session costs about half a MiB more for streams it never
      // opens (~50 bytes each, measured), and no publisher keeps that many groups in flight.
      parseIntIn(16, 10_000, " number of streams"),
      (v) => `${v} streams per connection (groups in flight toward the relay)`,
    ),
    gc: readGc(r, options.cliV8Flags),
    mesh: readMeshSettings(r, authKeys.value !== undefined),
  };
  r.finish();
  return config;
}

/**
 * The startup WARNING for a relay with auth off on an address beyond this
 * host (RELAY_ADDR given explicitly, not loopback); undefined otherwise.
 */
export function relayExposureWarning(config: RelayConfig): string | undefined {
  return anonymousExposureWarning(
    config.authKeys.value !== undefined,
    [["RELAY_ADDR", config.addr.value]],
    "may publish any broadcast, subscribe to every track and join as a peer",
  );
}
