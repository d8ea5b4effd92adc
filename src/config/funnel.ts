import { type OriginPolicy, parseOriginList, parseOriginPolicy } from "./origins.ts";
import { parseTrackPatterns, TrackPatterns } from "../path/mod.ts";
import { type LedgerLocation, parseLedgerUri, type StoreCredentials } from "./ledger_location.ts";
import { pathProblem } from "../path/mod.ts";
import { SESSION_SCHEMES } from "./schemes.ts";
import { type Env, EnvReader, nonEmpty } from "./env.ts";
import { type ListenAddress, parseBoolean, parseIntIn, parseListenAddress } from "./parse.ts";
import { parseRateLimit, type RateLimit } from "./rate_limit.ts";
import { anonymousExposureWarning, defaultListenAddress } from "./exposure.ts";
import {
  DEFAULT_RETENTION_INTERVAL_MS,
  KEEP_FOREVER,
  parseRetentionPolicy,
  parseRetentionRules,
  type RetentionConfig,
} from "./retention.ts";

export type { Env } from "./env.ts";
export type { ListenAddress } from "./parse.ts";
export type { RateLimit } from "./rate_limit.ts";

/** How the funnel reaches its relay (RELAY_URL and friends). */
export interface RelayTarget {
  /** `https:` (WebTransport), `moqt:` (native QUIC) or `wss:` (WebSocket), possibly with `?jwt=`. */
  readonly url: URL;
  /** RELAY_SIGNING_KEY + RELAY_PUBLISH: sign a fresh credential for every session. */
  readonly signing?: { readonly keyFile: string; readonly publish: string };
  /** RELAY_CA_FILE: PEM to trust as the relay's root. */
  readonly caFile?: string;
  /** RELAY_TLS_INSECURE: skip verification (development only). */
  readonly insecure: boolean;
  /** RELAY_VERSION: the IETF MoQ Transport draft to speak (undefined: moq-lite, the default). */
  readonly ietf?: 14 | 16 | 20;
}

/** Everything `sluice funnel` reads from its environment, validated. */
export interface FunnelConfig {
  /** FUNNEL_ADDR: where the HTTP API listens. */
  readonly ingest: ListenAddress;
  /** FUNNEL_SENDER_LIMIT: records per sender per track; undefined for no limit. */
  readonly senderLimit: RateLimit | undefined;
  /** FUNNEL_TRACK_LIMIT: records per track from all senders; undefined for no limit. */
  readonly trackLimit: RateLimit | undefined;
  /** RELAY_URL and friends: the relay to publish through, or undefined for none. */
  readonly relay: RelayTarget | undefined;
  /** FUNNEL_SERVE_ADDR: own MoQ listener, or undefined for none. */
  readonly serve: ListenAddress | undefined;
  /** FUNNEL_METRICS_ADDR: a separate HTTP listener for /metrics; undefined serves it on the ingest address. */
  readonly metrics?: ListenAddress | undefined;
  /** FUNNEL_DATAGRAM_TRACKS: tracks the own listener sends as QUIC datagrams (single-frame groups that fit). */
  readonly datagramTracks: TrackPatterns;
  /** LEDGER_URI: where records are stored. */
  readonly ledger: LedgerLocation;
  /** LEDGER_RETENTION, LEDGER_RETENTION_RULES, LEDGER_RETENTION_INTERVAL: what the ledger keeps. */
  readonly retention: RetentionConfig;
  /** AWS_ACCESS_KEY_ID and friends, for an S3 ledger. */
  readonly storeCredentials: StoreCredentials | undefined;
  /** CERT_FILE: the own listener's certificate chain (PEM). */
  readonly certFile: string;
  /** KEY_FILE: the own listener's private key (PEM). */
  readonly keyFile: string;
  /** True when CERT_FILE and KEY_FILE were left at their defaults. */
  readonly defaultCertificate: boolean;
  /** CORS_ALLOWED_ORIGINS: browser origins allowed over HTTP and WebTransport. */
  readonly cors: OriginPolicy;
  /**
   * FUNNEL_PUBLIC_URL: the origin clients reach the funnel at, for absolute
   * `Location` headers; unset, they are paths (never taken from `Host`).
   */
  readonly publicOrigin?: string | undefined;
  /**
   * SLUICE_AUTH_KEYS, its cache file and URL token, and the `aud` / `iss`
   * credentials must carry (SLUICE_AUTH_AUDIENCE, SLUICE_AUTH_ISSUER);
   * undefined when auth is off.
   */
  readonly auth:
    | {
      readonly keys: string;
      readonly cacheFile?: string;
      readonly bearerToken?: string;
      readonly audience?: string;
      readonly issuer?: string;
    }
    | undefined;
}

/** Default ingest port: on every interface with a key set, on 127.0.0.1 without one. */
export const DEFAULT_FUNNEL_PORT = 8090;
/** Default own MoQ listener port when RELAY_URL is unset (interfaces as for ingest). */
export const DEFAULT_SERVE_PORT = 4433;
/** Default certificate files for the own listener. */
export const DEFAULT_CERT_FILE = "certs/server.crt";
/** Default private key file for the own listener. */
export const DEFAULT_KEY_FILE = "certs/server.key";

/**
 * Parses the funnel's environment. Throws a `ConfigError` listing every
 * bad variable by name, so a bad value stops the process with a message.
 *
 * @example
 * ```ts
 * const config = loadFunnelConfig(Deno.env.toObject());
 * ```
 */
export function loadFunnelConfig(env: Env): FunnelConfig {
  const r = new EnvReader(env);
  const auth = readAuth(r);
  const ingest = r.value("FUNNEL_ADDR", parseListenAddress) ??
    defaultListenAddress(DEFAULT_FUNNEL_PORT, auth !== undefined);
  const senderLimit = r.value("FUNNEL_SENDER_LIMIT", parseRateLimit);
  const trackLimit = r.value("FUNNEL_TRACK_LIMIT", parseRateLimit);
  const relay = readRelayTarget(r);
  const serve = readServeAddress(r, relay !== undefined, auth !== undefined);
  const metrics = r.value("FUNNEL_METRICS_ADDR", parseListenAddress);
  const datagramTracks = r.value("FUNNEL_DATAGRAM_TRACKS", parseTrackPatterns) ??
    new TrackPatterns([]);
  const { ledger, storeCredentials } = readLedger(r, env);
  const retention = readRetention(r);
  const certFile = r.text("CERT_FILE") ?? DEFAULT_CERT_FILE;
  const keyFile = r.text("KEY_FILE") ?? DEFAULT_KEY_FILE;
  const cors = r.value("CORS_ALLOWED_ORIGINS", parseOriginPolicy) ?? parseOriginPolicy(undefined);
  const publicOrigin = r.value("FUNNEL_PUBLIC_URL", parsePublicOrigin);
  r.finish();
  return {
    ingest,
    senderLimit,
    trackLimit,
    relay,
    serve,
    metrics,
    datagramTracks,
    ledger,
    retention,
    storeCredentials,
    certFile,
    keyFile,
    defaultCertificate: env["CERT_FILE"] === undefined && env["KEY_FILE"] === undefined,
    cors,
    ...(publicOrigin !== undefined ? { publicOrigin } : {}),
    auth,
  };
}

/**
 * The startup WARNING for a funnel with auth off that listens beyond this
 * host (an explicit FUNNEL_ADDR, FUNNEL_SERVE_ADDR or FUNNEL_METRICS_ADDR
 * that is not loopback); undefined otherwise.
 */
export function funnelExposureWarning(config: FunnelConfig): string | undefined {
  return anonymousExposureWarning(
    config.auth !== undefined,
    [
      ["FUNNEL_ADDR", config.ingest],
      ["FUNNEL_SERVE_ADDR", config.serve],
      ["FUNNEL_METRICS_ADDR", config.metrics],
    ],
    "may post, redact and delete records and streams, and subscribe to every track",
  );
}

/** RELAY_URL with RELAY_SIGNING_KEY + RELAY_PUBLISH, RELAY_CA_FILE and RELAY_TLS_INSECURE. */
function readRelayTarget(r: EnvReader): RelayTarget | undefined {
  const relayUrl = r.value("RELAY_URL", parseRelayUrl);
  const signingKey = r.text("RELAY_SIGNING_KEY");
  const publish = r.text("RELAY_PUBLISH");
  if ((signingKey === undefined) !== (publish === undefined)) {
    r.problem(
      signingKey === undefined ? "RELAY_SIGNING_KEY" : "RELAY_PUBLISH",
      "RELAY_SIGNING_KEY and RELAY_PUBLISH must be set together",
    );
  }
  const publishProblem = publish === undefined ? undefined : pathProblem(publish, false);
  if (publishProblem !== undefined) r.problem("RELAY_PUBLISH", `"${publish}" ${publishProblem}`);
  const caFile = r.text("RELAY_CA_FILE");
  const insecure = r.value("RELAY_TLS_INSECURE", parseBoolean) ?? false;
  const ietf = r.value("RELAY_VERSION", parseRelayVersion);
  if (ietf === 14 && relayUrl && relayUrl.protocol !== "moqt:") {
    r.problem(
      "RELAY_VERSION",
      "moq-00 (draft 14) has a token on native QUIC only: use a moqt: URL",
    );
  }
  if (!relayUrl) {
    for (const name of ["RELAY_SIGNING_KEY", "RELAY_PUBLISH", "RELAY_CA_FILE", "RELAY_VERSION"]) {
      if (r.text(name) !== undefined) r.problem(name, "has no effect without RELAY_URL");
    }
    return undefined;
  }
  return {
    url: relayUrl,
    insecure,
    ...(signingKey && publish ? { signing: { keyFile: signingKey, publish } } : {}),
    ...(caFile ? { caFile } : {}),
    ...(ietf ? { ietf } : {}),
  };
}

/** RELAY_VERSION: `moq-lite` (the default), or the IETF draft's token `moqt-20`, `moqt-16`, `moq-00`. */
function parseRelayVersion(value: string): 14 | 16 | 20 | undefined {
  const drafts: Record<string, 14 | 16 | 20 | undefined> = {
    "moq-lite": undefined,
    "moqt-20": 20,
    "moqt-16": 16,
    "moq-00": 14,
  };
  if (!(value in drafts)) {
    throw new TypeError(`"${value}" is not one of moq-lite, moqt-20, moqt-16, moq-00`);
  }
  return drafts[value];
}

/** FUNNEL_SERVE_ADDR: the own listener, on by default only without a relay; "none" turns it off. */
function readServeAddress(
  r: EnvReader,
  hasRelay: boolean,
  authOn: boolean,
): ListenAddress | undefined {
  const text = r.text("FUNNEL_SERVE_ADDR");
  if (text === undefined) {
    return hasRelay ? undefined : defaultListenAddress(DEFAULT_SERVE_PORT, authOn);
  }
  if (text.toLowerCase() === "none") return undefined;
  return r.value("FUNNEL_SERVE_ADDR", parseListenAddress);
}

/** LEDGER_URI and, for S3, the store's credentials. */
function readLedger(
  r: EnvReader,
  env: Env,
): { ledger: LedgerLocation; storeCredentials: StoreCredentials | undefined } {
  let ledger: LedgerLocation = { kind: "memory" };
  try {
    ledger = parseLedgerUri(env["LEDGER_URI"]);
  } catch (error) {
    r.problem("LEDGER_URI", (error as Error).message);
  }
  const openTracks = r.value("LEDGER_OPEN_TRACKS", parseIntIn(1, 1_000_000, " number of tracks"));
  if (openTracks !== undefined) {
    if (ledger.kind === "directory") ledger = { ...ledger, openTracks };
    else r.problem("LEDGER_OPEN_TRACKS", "applies only to a file: LEDGER_URI");
  }
  const storeCredentials = readStoreCredentials(env);
  if (ledger.kind === "s3" && !storeCredentials) {
    r.problem(
      "AWS_ACCESS_KEY_ID",
      "the s3 ledger needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    );
  }
  return { ledger, storeCredentials };
}

/** LEDGER_RETENTION (default: keep forever), LEDGER_RETENTION_RULES, LEDGER_RETENTION_INTERVAL (s). */
function readRetention(r: EnvReader): RetentionConfig {
  const seconds = r.value("LEDGER_RETENTION_INTERVAL", parseIntIn(1, 86_400, " of seconds"));
  return {
    default: r.value("LEDGER_RETENTION", parseRetentionPolicy) ?? KEEP_FOREVER,
    rules: r.value("LEDGER_RETENTION_RULES", parseRetentionRules) ?? [],
    intervalMs: seconds === undefined ? DEFAULT_RETENTION_INTERVAL_MS : seconds * 1000,
  };
}

/** SLUICE_AUTH_KEYS with its cache file, the bearer token for fetching them, and aud / iss. */
function readAuth(r: EnvReader): FunnelConfig["auth"] {
  const keys = r.text("SLUICE_AUTH_KEYS");
  const cacheFile = r.text("SLUICE_AUTH_KEYS_CACHE");
  const bearerToken = r.text("SLUICE_RELAY_TOKEN");
  // As on the relay: a key set shared with other services (the compose stack shares one)
  // must not let a credential minted for them post here.
  const audience = r.text("SLUICE_AUTH_AUDIENCE");
  const issuer = r.text("SLUICE_AUTH_ISSUER");
  return keys === undefined ? undefined : {
    keys,
    ...(cacheFile ? { cacheFile } : {}),
    ...(bearerToken ? { bearerToken } : {}),
    ...(audience ? { audience } : {}),
    ...(issuer ? { issuer } : {}),
  };
}

function parseRelayUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`"${value}" is not a URL such as https://relay.example:4433/`);
  }
  if (!SESSION_SCHEMES.includes(url.protocol)) {
    throw new TypeError(
      `scheme "${url.protocol}" is not supported; use https: (WebTransport), moqt: (native QUIC) ` +
        `or wss: (WebSocket)`,
    );
  }
  if (!url.hostname) throw new TypeError(`"${value}" names no host`);
  return url;
}

function readStoreCredentials(env: Env): StoreCredentials | undefined {
  const accessKeyId = nonEmpty(env["AWS_ACCESS_KEY_ID"]);
  const secretAccessKey = nonEmpty(env["AWS_SECRET_ACCESS_KEY"]);
  if (!accessKeyId || !secretAccessKey) return undefined;
  const sessionToken = nonEmpty(env["AWS_SESSION_TOKEN"]);
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/** FUNNEL_PUBLIC_URL: one http(s) origin, such as `https://funnel.example`. */
function parsePublicOrigin(text: string): string {
  const list = parseOriginList(text);
  if (list === "*" || list.length !== 1) {
    throw new TypeError(`"${text}" is not one origin such as https://funnel.example`);
  }
  return list[0]!;
}
