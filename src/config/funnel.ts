import { type OriginPolicy, parseOriginPolicy } from "./origins.ts";
import { parseTrackPatterns, TrackPatterns } from "../path/mod.ts";
import { type LedgerLocation, parseLedgerUri, type StoreCredentials } from "./ledger_location.ts";
import { pathProblem } from "../path/mod.ts";
import { SESSION_SCHEMES } from "./schemes.ts";
import { type Env, EnvReader, nonEmpty } from "./env.ts";
import { type ListenAddress, parseBoolean, parseListenAddress } from "./parse.ts";
import { parseRateLimit, type RateLimit } from "./rate_limit.ts";

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
  /** SLUICE_AUTH_KEYS, its cache file and URL token; undefined when auth is off. */
  readonly auth:
    | { readonly keys: string; readonly cacheFile?: string; readonly bearerToken?: string }
    | undefined;
}

/** Default ingest address. */
export const DEFAULT_FUNNEL_ADDR = ":8090";
/** Default own MoQ listener when RELAY_URL is unset. */
export const DEFAULT_SERVE_ADDR = ":4433";
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
  const ingest = r.value("FUNNEL_ADDR", parseListenAddress) ??
    parseListenAddress(DEFAULT_FUNNEL_ADDR);
  const senderLimit = r.value("FUNNEL_SENDER_LIMIT", parseRateLimit);
  const trackLimit = r.value("FUNNEL_TRACK_LIMIT", parseRateLimit);
  const relay = readRelayTarget(r);
  const serve = readServeAddress(r, relay !== undefined);
  const metrics = r.value("FUNNEL_METRICS_ADDR", parseListenAddress);
  const datagramTracks = r.value("FUNNEL_DATAGRAM_TRACKS", parseTrackPatterns) ??
    new TrackPatterns([]);
  const { ledger, storeCredentials } = readLedger(r, env);
  const certFile = r.text("CERT_FILE") ?? DEFAULT_CERT_FILE;
  const keyFile = r.text("KEY_FILE") ?? DEFAULT_KEY_FILE;
  const cors = r.value("CORS_ALLOWED_ORIGINS", parseOriginPolicy) ?? parseOriginPolicy(undefined);
  const auth = readAuth(r);
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
    storeCredentials,
    certFile,
    keyFile,
    defaultCertificate: env["CERT_FILE"] === undefined && env["KEY_FILE"] === undefined,
    cors,
    auth,
  };
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
  if (!relayUrl) {
    for (const name of ["RELAY_SIGNING_KEY", "RELAY_PUBLISH", "RELAY_CA_FILE"]) {
      if (r.text(name) !== undefined) r.problem(name, "has no effect without RELAY_URL");
    }
    return undefined;
  }
  return {
    url: relayUrl,
    insecure,
    ...(signingKey && publish ? { signing: { keyFile: signingKey, publish } } : {}),
    ...(caFile ? { caFile } : {}),
  };
}

/** FUNNEL_SERVE_ADDR: the own listener, on by default only without a relay; "none" turns it off. */
function readServeAddress(r: EnvReader, hasRelay: boolean): ListenAddress | undefined {
  const text = r.text("FUNNEL_SERVE_ADDR");
  if (text === undefined) return hasRelay ? undefined : parseListenAddress(DEFAULT_SERVE_ADDR);
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
  const storeCredentials = readStoreCredentials(env);
  if (ledger.kind === "s3" && !storeCredentials) {
    r.problem(
      "AWS_ACCESS_KEY_ID",
      "the s3 ledger needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    );
  }
  return { ledger, storeCredentials };
}

/** SLUICE_AUTH_KEYS with its cache file and the bearer token for fetching them. */
function readAuth(r: EnvReader): FunnelConfig["auth"] {
  const keys = r.text("SLUICE_AUTH_KEYS");
  const cacheFile = r.text("SLUICE_AUTH_KEYS_CACHE");
  const bearerToken = r.text("SLUICE_RELAY_TOKEN");
  return keys === undefined ? undefined : {
    keys,
    ...(cacheFile ? { cacheFile } : {}),
    ...(bearerToken ? { bearerToken } : {}),
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
