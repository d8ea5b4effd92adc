import { parseOriginPolicy } from "../http/cors.ts";
import type { OriginPolicy } from "../http/cors.ts";
import { parseListenAddress } from "../http/server.ts";
import { type LedgerLocation, parseLedgerUri, type StoreCredentials } from "../ledger/mod.ts";
import { parseRateLimit, type RateLimit } from "../funnel/limits.ts";
import { type Env, parseBoolean, ProblemCollector } from "./errors.ts";

/** A host and port to listen on. */
export interface ListenAddress {
  readonly hostname: string;
  readonly port: number;
}

/** How the funnel reaches its relay (RELAY_URL and friends). */
export interface RelayTarget {
  /** `https:` (WebTransport) or `moqt:` (native QUIC), possibly with `?jwt=`. */
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
  readonly ingest: ListenAddress;
  readonly senderLimit: RateLimit | undefined;
  readonly trackLimit: RateLimit | undefined;
  readonly relay: RelayTarget | undefined;
  /** Own MoQ listener, or undefined for none. */
  readonly serve: ListenAddress | undefined;
  readonly ledger: LedgerLocation;
  readonly storeCredentials: StoreCredentials | undefined;
  readonly certFile: string;
  readonly keyFile: string;
  /** True when CERT_FILE and KEY_FILE were left at their defaults. */
  readonly defaultCertificate: boolean;
  readonly cors: OriginPolicy;
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
  const p = new ProblemCollector();
  const ingest = p.read(env, "FUNNEL_ADDR", parseListenAddress) ??
    parseListenAddress(DEFAULT_FUNNEL_ADDR);
  const senderLimit = p.read(env, "FUNNEL_SENDER_LIMIT", parseRateLimit);
  const trackLimit = p.read(env, "FUNNEL_TRACK_LIMIT", parseRateLimit);
  const relayUrl = p.read(env, "RELAY_URL", parseRelayUrl);

  const signingKey = nonEmpty(env["RELAY_SIGNING_KEY"]);
  const publish = nonEmpty(env["RELAY_PUBLISH"]);
  if ((signingKey === undefined) !== (publish === undefined)) {
    p.add(
      signingKey === undefined ? "RELAY_SIGNING_KEY" : "RELAY_PUBLISH",
      "RELAY_SIGNING_KEY and RELAY_PUBLISH must be set together",
    );
  }
  if (publish !== undefined && (/^\/|\/$|\/\/|(^|\/)\.\.?(\/|$)/.test(publish))) {
    p.add("RELAY_PUBLISH", `"${publish}" must be a broadcast path without leading or trailing /`);
  }
  const caFile = nonEmpty(env["RELAY_CA_FILE"]);
  const insecure = p.read(env, "RELAY_TLS_INSECURE", parseBoolean) ?? false;
  if (!relayUrl) {
    for (const name of ["RELAY_SIGNING_KEY", "RELAY_PUBLISH", "RELAY_CA_FILE"]) {
      if (nonEmpty(env[name]) !== undefined) p.add(name, "has no effect without RELAY_URL");
    }
  }
  const relay: RelayTarget | undefined = relayUrl && {
    url: relayUrl,
    insecure,
    ...(signingKey && publish ? { signing: { keyFile: signingKey, publish } } : {}),
    ...(caFile ? { caFile } : {}),
  };

  const serveText = nonEmpty(env["FUNNEL_SERVE_ADDR"]);
  let serve: ListenAddress | undefined;
  if (serveText === undefined) {
    serve = relay ? undefined : parseListenAddress(DEFAULT_SERVE_ADDR);
  } else if (serveText.toLowerCase() === "none") {
    serve = undefined;
  } else {
    serve = p.read(env, "FUNNEL_SERVE_ADDR", parseListenAddress);
  }

  let ledger: LedgerLocation = { kind: "memory" };
  try {
    ledger = parseLedgerUri(env["LEDGER_URI"]);
  } catch (error) {
    p.add("LEDGER_URI", (error as Error).message);
  }
  const storeCredentials = readStoreCredentials(env);
  if (ledger.kind === "s3" && !storeCredentials) {
    p.add("AWS_ACCESS_KEY_ID", "the s3 ledger needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }

  const certFile = nonEmpty(env["CERT_FILE"]) ?? DEFAULT_CERT_FILE;
  const keyFile = nonEmpty(env["KEY_FILE"]) ?? DEFAULT_KEY_FILE;
  const cors = p.read(env, "CORS_ALLOWED_ORIGINS", parseOriginPolicy) ??
    parseOriginPolicy(undefined);

  const keys = nonEmpty(env["SLUICE_AUTH_KEYS"]);
  const cacheFile = nonEmpty(env["SLUICE_AUTH_KEYS_CACHE"]);
  const bearerToken = nonEmpty(env["SLUICE_RELAY_TOKEN"]);
  const auth = keys === undefined ? undefined : {
    keys,
    ...(cacheFile ? { cacheFile } : {}),
    ...(bearerToken ? { bearerToken } : {}),
  };
  p.throwIfAny();
  return {
    ingest,
    senderLimit,
    trackLimit,
    relay,
    serve,
    ledger,
    storeCredentials,
    certFile,
    keyFile,
    defaultCertificate: env["CERT_FILE"] === undefined && env["KEY_FILE"] === undefined,
    cors,
    auth,
  };
}

function parseRelayUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`"${value}" is not a URL such as https://relay.example:4433/`);
  }
  if (url.protocol !== "https:" && url.protocol !== "moqt:") {
    throw new TypeError(
      `scheme "${url.protocol}" is not supported; use https: (WebTransport) or moqt: (native QUIC)`,
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

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/** The relay URL for display: the `jwt` parameter is masked. */
export function describeRelayUrl(url: URL): string {
  const shown = new URL(url.toString());
  if (shown.searchParams.has("jwt")) shown.searchParams.set("jwt", "***");
  return shown.toString();
}
