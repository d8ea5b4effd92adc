import { readSigner, type Verifier } from "../../auth/mod.ts";
import { loadServingCertificate, toHex } from "../../certs/mod.ts";
import type { OriginPolicy } from "../../http/mod.ts";
import type { Logger } from "../../log/mod.ts";
import type { TrackPatterns } from "../../path/mod.ts";
import { formatAddr, ipv4OnlyReason } from "../../transport/mod.ts";
import { type EntryFetch, LivePublisher, RECORD_LAG_MS, type TrackLookup } from "./publisher.ts";
import { RELAY_ASKER } from "./track_lookups.ts";

/** The max latency the relay session's tracks advertise (and its sends keep to), ms. */
const RELAY_SESSION_MAX_LATENCY_MS = 5000;
import {
  describeRelayUrl,
  type RedialTimers,
  RelayClient,
  type RelayState,
} from "./relay_client.ts";
import { startWorkerListener, type WorkerListener } from "./listener/mod.ts";

/** How the startup line names the transport of each RELAY_URL scheme. */
const TRANSPORT_NAMES: Readonly<Record<string, string>> = {
  "https:": "WebTransport",
  "moqt:": "native QUIC",
  "wss:": "WebSocket",
  "ws:": "WebSocket, unencrypted",
};

/** What the live side serves and where it publishes (the funnel builds it from its configuration). */
export interface LiveConfig {
  /** RELAY_URL and friends; undefined: no relay session. */
  readonly relay?: {
    /** `https:` (WebTransport) or `moqt:` (native QUIC), possibly with `?jwt=`. */
    readonly url: URL;
    /** RELAY_TLS_INSECURE. */
    readonly insecure: boolean;
    /** RELAY_CA_FILE: PEM to trust as the relay's root. */
    readonly caFile?: string;
    /** RELAY_SIGNING_KEY + RELAY_PUBLISH: sign a fresh credential for every session. */
    readonly signing?: { readonly keyFile: string; readonly publish: string };
    /** RELAY_VERSION: an IETF MoQ Transport draft to speak (default moq-lite). */
    readonly ietf?: 14 | 16 | 20;
  } | undefined;
  /** The own MoQ listener (FUNNEL_SERVE_ADDR); undefined: none. */
  readonly serve?: {
    /** Interface to bind ("" every interface: `::`, or `0.0.0.0` without IPv6). */
    readonly hostname: string;
    /** UDP port (0 picks one). */
    readonly port: number;
    /** CERT_FILE. */
    readonly certFile: string;
    /** KEY_FILE. */
    readonly keyFile: string;
    /** True when both files were left at their defaults: missing files then mean "generate one". */
    readonly defaultCertificate: boolean;
    /** FUNNEL_DATAGRAM_TRACKS: tracks sent to subscribers as QUIC datagrams where they fit. */
    readonly datagramTracks?: TrackPatterns;
  } | undefined;
  /** CORS_ALLOWED_ORIGINS, applied to WebTransport's Origin. */
  readonly cors: OriginPolicy;
}

/** Knobs tests and embedders may turn on the live side; the defaults follow the spec. */
export interface LiveOptions {
  /** Relay redial delay in ms (default 2000). */
  readonly redialMs?: number;
  /** Timers for the redial delay and credential expiry. */
  readonly timers?: RedialTimers;
  /** Lifetime of each signed relay credential, s (default and most 3600). */
  readonly relayCredentialTtlSeconds?: number;
  /** Pin the relay's certificate (development relays without a CA file). */
  readonly relayCertificateHashes?: readonly Uint8Array[];
  /** Wall clock in ms. */
  readonly now?: () => number;
  /** QUIC idle timeout of the relay session (native QUIC and WebTransport), ms (default 1000). */
  readonly relayIdleTimeoutMs?: number;
  /** Told of every relay state change. */
  readonly onRelayState?: (state: RelayState) => void;
  /** Per-subscriber queue bound of the own listener in groups (default 32). */
  readonly maxGroupQueue?: number;
  /**
   * Where a FETCH of a group no longer in a track's recent cache is read
   * (the funnel passes its ledger); without it such a FETCH is not found.
   */
  readonly fetchEntry?: EntryFetch;
  /**
   * Whether a track exists, and its newest entry (the funnel asks its
   * ledger): a subscription to a track closed while idle opens it again.
   */
  readonly lookupTrack?: TrackLookup;
  /**
   * Tracks the publisher and the own listener each keep open at most
   * (default `MAX_LIVE_TRACKS`, 4096).
   */
  readonly maxLiveTracks?: number;
}

/** The funnel's running live side. */
export interface LiveSide {
  /** The tracks as published through the relay session. */
  readonly publisher: LivePublisher;
  /** The own MoQ listener (in its own worker), when serving. */
  readonly listener: WorkerListener | undefined;
  /** The relay session, when RELAY_URL is set. */
  readonly relay: RelayClient | undefined;
  /** Summary value of the Relay line. */
  readonly relayLine: string;
  /** Summary value of the Serve line. */
  readonly serveLine: string;
  /** Starts dialing the relay (after restore, so the first session announces everything). */
  connect(): void;
  /** Ends the relay session, the listener and every track. */
  stop(): Promise<void>;
}

/**
 * Builds the live side: the publisher, the own
 * listener (FUNNEL_SERVE_ADDR with CERT_FILE/KEY_FILE, or a generated
 * development certificate when those are the defaults and missing), and the
 * relay client (RELAY_URL, signing a fresh credential per session with
 * RELAY_SIGNING_KEY + RELAY_PUBLISH).
 */
export async function startLive(
  config: LiveConfig,
  verifier: Verifier | undefined,
  log: Logger,
  options: LiveOptions = {},
): Promise<LiveSide> {
  const publisher = new LivePublisher({
    onError: (error) => log.error("Publishing a committed record failed", error),
    // The relay session has one subscriber, the relay: flow controlled, so a burst is not
    // skipped for the session's queue bound (what fell out of the cache is read back from
    // the ledger). Its sends still give up after 5 s, so a link gone silent frees them; the
    // relay fetches whatever did not arrive.
    lagMs: RECORD_LAG_MS,
    maxLatencyMs: RELAY_SESSION_MAX_LATENCY_MS,
    ...(options.fetchEntry ? { fetchEntry: options.fetchEntry } : {}),
    ...(options.lookupTrack ? { lookupTrack: options.lookupTrack } : {}),
    // The relay asks for all of its subscribers over its one session: a budget of its own.
    lookupAsker: () => RELAY_ASKER,
    ...(options.maxLiveTracks ? { maxTracks: options.maxLiveTracks } : {}),
  });
  let served: Served | undefined;
  try {
    const relay = config.relay
      ? await relayClient(config.relay, publisher, log, options)
      : undefined;
    served = config.serve
      ? await startOwnListener(config.serve, config.cors, verifier, log, options)
      : undefined;
    const listener = served?.listener;
    return {
      publisher,
      listener,
      relay,
      relayLine: config.relay ? relayLine(config.relay) : "none",
      serveLine: served?.line ?? "none",
      connect: () => relay?.start(),
      stop: async () => {
        await relay?.stop();
        await listener?.stop();
        publisher.close();
      },
    };
  } catch (error) {
    await served?.listener.stop();
    publisher.close();
    throw error;
  }
}

/** The relay session (RELAY_URL), signing a fresh credential per session when it has a key. */
async function relayClient(
  target: NonNullable<LiveConfig["relay"]>,
  publisher: LivePublisher,
  log: Logger,
  options: LiveOptions,
): Promise<RelayClient> {
  const caCerts = target.caFile ? [await readCaFile(target.caFile)] : undefined;
  const signing = target.signing;
  const signer = signing ? await readSigner(signing.keyFile) : undefined;
  const ttl = options.relayCredentialTtlSeconds ?? 3600;
  const now = options.now ?? Date.now;
  return new RelayClient({
    url: target.url,
    publisher,
    log,
    ...(signer && signing
      ? {
        publishPrefix: signing.publish,
        credential: async () => {
          const issued = now();
          const token = await signer.sign({
            scopes: [{ actions: ["publish"], broadcast: { prefix: signing.publish } }],
          }, { ttlSeconds: ttl, now: () => issued });
          return { token, expiresAt: (Math.floor(issued / 1000) + ttl) * 1000 };
        },
      }
      : {}),
    ...(caCerts ? { caCerts } : {}),
    ...(options.relayCertificateHashes
      ? { serverCertificateHashes: options.relayCertificateHashes }
      : {}),
    insecure: target.insecure,
    ...(target.ietf ? { ietf: target.ietf } : {}),
    ...(options.redialMs !== undefined ? { redialMs: options.redialMs } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.relayIdleTimeoutMs ? { idleTimeoutMs: options.relayIdleTimeoutMs } : {}),
    ...(options.onRelayState ? { onState: options.onRelayState } : {}),
  });
}

/** The summary's Relay line: where, over what, with which credential. */
function relayLine(target: NonNullable<LiveConfig["relay"]>): string {
  const transport = TRANSPORT_NAMES[target.url.protocol] ?? target.url.protocol;
  const credential = target.signing
    ? `a fresh credential per session publishing at "${target.signing.publish}"`
    : target.url.searchParams.has("jwt")
    ? "credential from the URL"
    : "no credential";
  const tls = target.insecure ? "; TLS verification off" : "";
  const ietf = target.ietf ? `, IETF MoQ Transport draft ${target.ietf}` : "";
  return `${describeRelayUrl(target.url)} (${transport}${ietf}; ${credential}${tls})`;
}

/** The own listener and the summary's Serve line. */
interface Served {
  readonly listener: WorkerListener;
  readonly line: string;
}

/** The own MoQ listener (FUNNEL_SERVE_ADDR), in its worker, with its certificate. */
async function startOwnListener(
  serve: NonNullable<LiveConfig["serve"]>,
  cors: LiveConfig["cors"],
  verifier: Verifier | undefined,
  log: Logger,
  options: LiveOptions,
): Promise<Served> {
  const tls = await loadServingCertificate({
    certFile: serve.certFile,
    keyFile: serve.keyFile,
    defaultCertificate: serve.defaultCertificate,
    server: "MoQ listener",
    log: (line) => log.warn(line),
  });
  const listener = await startWorkerListener({
    hostname: serve.hostname,
    port: serve.port,
    certPem: tls.certPem,
    keyPem: tls.keyPem,
    verifier,
    cors,
    log,
    ...(options.maxGroupQueue ? { maxGroupQueue: options.maxGroupQueue } : {}),
    ...(serve.datagramTracks ? { datagramTracks: serve.datagramTracks } : {}),
    ...(options.fetchEntry ? { fetchEntry: options.fetchEntry } : {}),
    ...(options.lookupTrack ? { lookupTrack: options.lookupTrack } : {}),
    ...(options.maxLiveTracks ? { maxTracks: options.maxLiveTracks } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  const at = formatAddr(listener.addr);
  const origin = tls.generated ? "generated for development" : serve.certFile;
  const ipv4Only = ipv4OnlyReason(serve.hostname);
  return {
    listener,
    line: `moqt://${at} and https://${at} (WebTransport) on UDP, wss://${at} (WebSocket) on ` +
      `TCP; certificate sha256 ${toHex(tls.sha256)} (${origin})` +
      (ipv4Only ? `; IPv4 only: ${ipv4Only}` : ""),
  };
}

async function readCaFile(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new Error(`Cannot read RELAY_CA_FILE "${path}": ${(error as Error).message}`, {
      cause: error,
    });
  }
}
