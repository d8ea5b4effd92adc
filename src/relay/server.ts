import { RELAY_DEFAULTS } from "../config/mod.ts";
import { errorStack } from "../error_text/mod.ts";
import { rateLimitedLog } from "../log/mod.ts";
import { startMemoryTrimmer } from "../memory_trim/mod.ts";
import type { Verifier } from "../auth/mod.ts";
import type { TrackPatterns } from "../path/mod.ts";
import { originPolicy, problemResponse, type RunningServer, startHttpServer } from "../http/mod.ts";
import { bindSamePort, qmuxUpgrade, webTransportAdmission } from "../listeners/mod.ts";
import { IETF_PROTOCOLS, IETF_WEB_PROTOCOLS, randomHopId, VERSIONS } from "../moq/mod.ts";

// WebTransport and WebSocket sessions: moq-lite first, then the IETF drafts that have a token there.
const WEB_PROTOCOLS: readonly string[] = [...VERSIONS, ...IETF_WEB_PROTOCOLS];
import {
  type AdmitWebTransport,
  ipv4OnlyReason,
  isWebSocketUpgrade,
  listen,
  type Listener,
  raiseUdpReceiveBuffer,
  type Session,
  udpReceiveQueue,
} from "../transport/mod.ts";
import { admitSession } from "./sessions/mod.ts";
import { createRelayHandler } from "./ops/mod.ts";
import { RelayCore } from "./routing/mod.ts";
import { createRelayMetrics, type RelayMetrics } from "./metrics/mod.ts";
import {
  type PeerCredential,
  type PeerEntry,
  Peers,
  type PeerTransport,
  peerTransport,
  type Resolver,
} from "./mesh/mod.ts";
import { RelaySessions } from "./sessions/mod.ts";

/** Options of {@link startRelay}. */
export interface RelayOptions {
  /**
   * Interface to bind (UDP for MoQ, TCP for HTTP); "" is every interface:
   * `::`, taking IPv4 too, or `0.0.0.0` where the host has no IPv6 (logged).
   */
  readonly hostname: string;
  /** Port for both (0 picks a free one). */
  readonly port: number;
  /** Certificate and key (PEM) for QUIC, WebTransport and HTTPS. */
  readonly tls: { readonly certPem: string; readonly keyPem: string };
  /** GROUP_CACHE_SIZE. */
  readonly groupCacheSize: number;
  /** RELAY_CACHE_MS (default 10000; 0: no age limit). */
  readonly groupCacheMs?: number;
  /** RELAY_CACHE_BYTES (default 32 MiB). */
  readonly groupCacheBytes?: number;
  /** RELAY_PPROF. */
  readonly pprof: boolean;
  /**
   * RELAY_METRICS_ADDR: a plain-HTTP listener of its own for /routes, /metrics
   * and /debug/pprof/* (and /health), which the public port then no longer
   * serves. Unset (the default), the public port serves them to loopback
   * clients only.
   */
  readonly metricsAddr?: { readonly hostname: string; readonly port: number };
  /** CORS_ALLOWED_ORIGINS: browser origins allowed to open WebTransport and WebSocket ("*": any). */
  readonly corsAllowedOrigins: readonly string[] | "*";
  /**
   * RELAY_DATAGRAM_TRACKS: tracks whose single-frame groups that fit a
   * datagram go to client sessions (native QUIC, WebTransport) as QUIC
   * datagrams instead of streams (default none).
   */
  readonly datagramTracks?: TrackPatterns;
  /**
   * RELAY_DELIVERY_TURN_MS: under overload, subscriptions (clients and peers) take turns
   * of this much delivery so each gets its share (0 or unset: no turns).
   */
  readonly deliveryTurnMs?: number;
  /**
   * RELAY_INCOMING_STREAMS: unidirectional streams each connection (native QUIC, WebTransport,
   * QMux over WebSocket) may have open toward the relay at once, i.e. groups in flight from a
   * publisher or peer (default 1000). Fixed when a connection is accepted, before its credential
   * is seen, so it is the same for every session; the peers this relay dials are not affected.
   */
  readonly incomingStreams?: number;
  /** Credential verifier (SLUICE_AUTH_KEYS); undefined admits every session (with a warning). */
  readonly verifier: Verifier | undefined;
  /** Wall clock in ms (default Date.now). */
  readonly now?: () => number;
  /** Logs a line (default console.error). */
  readonly log?: (line: string) => void;
  /** RTT ping interval of peer sessions in ms (default 10000; 0 disables); clients are not pinged. */
  readonly rttIntervalMs?: number;
  /** How long an unused track's upstream subscription is kept, ms (default 5000). */
  readonly idleMs?: number;
  /**
   * How long a track whose route ended keeps its subscribers while it waits for the broadcast to
   * come back, ms (RELAY_PUBLISHER_GRACE_MS, default 10000).
   */
  readonly orphanMs?: number;
  /** This relay's hop id (default: a random one per run). */
  readonly hopId?: bigint;
  /** PEERS: relays to dial (default none). */
  readonly peers?: readonly PeerEntry[];
  /** RELAY_NAME (default `relay`). */
  readonly name?: string;
  /** Signs a peer credential per dialed session (RELAY_PEER_KEY); none dials without one. */
  readonly peerCredential?: () => Promise<PeerCredential>;
  /** PEER_CA_FILE contents (default the system roots). */
  readonly peerCaCerts?: readonly string[];
  /** Opens transport sessions to peers (default native QUIC or WebSocket by scheme, see {@linkcode peerTransport}). */
  readonly peerTransport?: PeerTransport;
  /** Resolves PEERS names (default the system resolver). */
  readonly resolve?: Resolver;
  /** Longest wait for one peer dial, transport and moq handshake, ms (default 10000). */
  readonly peerDialTimeoutMs?: number;
  /** GOAWAY_REDIRECT_URI, sent in GOAWAY when the relay drains (default none). */
  readonly goawayUri?: string;
  /**
   * WebSocket sessions setting up at once, and how long each may take to send
   * its transport parameters, ms (defaults `MAX_SETTING_UP`, `SETUP_TIMEOUT_MS`;
   * see {@linkcode qmuxUpgrade}).
   */
  readonly webSocketSetup?: { readonly maxSettingUp?: number; readonly timeoutMs?: number };
}

/** A running relay. */
export interface RunningRelay {
  /** Bound address (`::` or `0.0.0.0` for every interface); UDP and TCP share the port. */
  readonly addr: { readonly hostname: string; readonly port: number };
  /** The RELAY_METRICS_ADDR listener's bound address, when there is one. */
  readonly metricsAddr?: Deno.NetAddr;
  /**
   * The UDP socket's receive buffer after the relay asked for 4 MiB, as the kernel reports it
   * (twice the usable bytes); undefined when it could not be sized (not Linux, or no FFI for libc).
   */
  readonly udpReceiveBuffer: number | undefined;
  /** The relay's metrics. */
  readonly metrics: RelayMetrics;
  /** Routing and fan-out state. */
  readonly core: RelayCore;
  /** This relay's hop id. */
  readonly hopId: bigint;
  /** The peers it dials. */
  readonly peers: Peers;
  /**
   * Drains: stops being ready, refuses new sessions, sends GOAWAY (with
   * `goawayUri`) to every session and waits up to `timeoutMs` (default
   * 10000) for them to leave. Resolves true when all left; {@linkcode stop} follows.
   */
  drain(timeoutMs?: number): Promise<boolean>;
  /** Stops accepting, closes every session and the HTTP server. */
  stop(): Promise<void>;
}

/**
 * Starts the relay: the UDP listener (native QUIC moq-lite and WebTransport)
 * and, on the same port number over TCP, the HTTPS endpoints and QMux over
 * WebSocket (an `Upgrade: websocket` request on any path), admitted exactly
 * like WebTransport.
 *
 * @example
 * ```ts
 * const relay = await startRelay({ hostname: "127.0.0.1", port: 0, tls, groupCacheSize: 8,
 *   pprof: false, corsAllowedOrigins: "*", verifier: undefined });
 * await relay.stop();
 * ```
 */
export async function startRelay(options: RelayOptions): Promise<RunningRelay> {
  const now = options.now ?? Date.now;
  const log = options.log ?? ((l: string) => console.error(l));
  const metrics = createRelayMetrics();
  const core = routingCore(options, metrics, now, log);
  warnUnauthenticated(options, log);
  const hopId = options.hopId ?? randomHopId();
  const { sessions, peers } = sessionsAndPeers(options, { core, metrics, hopId, now, log });
  // After a burst of sessions, freed QUIC and TLS state goes back to the system.
  const trimmer = startMemoryTrimmer();
  let ready = false;
  const handlerOptions = {
    core,
    metrics,
    now,
    startedAt: now(),
    ready: () => ready,
    pprof: options.pprof,
  };
  const handler = createRelayHandler({
    ...handlerOptions,
    ops: options.metricsAddr ? "none" : "loopback",
  });
  // The funnel's listener's rule: besides CORS_ALLOWED_ORIGINS, a page of the relay's
  // own origin is admitted (the relay serves none, so in practice nothing changes).
  const admitReady = webTransportAdmission({
    protocols: WEB_PROTOCOLS,
    origins: originPolicy(options.corsAllowedOrigins),
    admitCredential: (url) => admitSession(url, options.verifier),
  });
  // A draining relay takes no new sessions: a WebTransport CONNECT and a WebSocket upgrade are
  // both refused with 503 (a client may try another relay) rather than accepted and closed.
  const admit: AdmitWebTransport = (req) =>
    ready ? admitReady(req) : { status: 503, reason: "The relay is not accepting sessions" };
  const onSession = (s: Session): void => {
    trimmer.track(s);
    sessions.handle(s);
  };
  let bound: { listener: Listener; server: RunningServer };
  let opsServer: RunningServer | undefined;
  try {
    if (options.metricsAddr) {
      const opsHandler = createRelayHandler({ ...handlerOptions, ops: "all" });
      opsServer = await startHttpServer((req) => opsHandler(req), {
        hostname: options.metricsAddr.hostname,
        port: options.metricsAddr.port,
      });
    }
    bound = await bindRelay(options, { admit, onSession, handler, log });
  } catch (e) {
    await opsServer?.stop();
    trimmer.stop();
    await sessions.stop();
    throw e;
  }
  const { listener, server: http } = bound;
  const port = listener.addr.port;
  // Thousands of sessions' ACKs arrive in bursts while a delivery turn runs; the host's default
  // buffer (often 208 KiB) overflows, and every drop costs a retransmission (docs/relay.md).
  const udpReceiveBuffer = raiseUdpReceiveBuffer(port);
  // ...and a fan-out to many thousands still outpaces the reading: turns wait while it fills.
  const backlog = udpReceiveQueue(port);
  if (backlog) sessions.watchSocketBacklog(backlog);
  ready = true;
  warnAtStart(options, trimmer.available, log);
  peers.start();
  let stopping: Promise<void> | undefined;
  let draining: Promise<boolean> | undefined;
  return {
    addr: { hostname: listener.addr.hostname, port },
    udpReceiveBuffer,
    ...(opsServer ? { metricsAddr: opsServer.addr } : {}),
    metrics,
    core,
    hopId,
    peers,
    drain: (timeoutMs = 10_000) =>
      draining ??= (() => {
        ready = false;
        peers.finish();
        sessions.goaway(options.goawayUri ?? "");
        return sessions.drained(timeoutMs);
      })(),
    stop: () =>
      stopping ??= (async () => {
        ready = false;
        peers.stop();
        trimmer.stop();
        await sessions.stop();
        core.close();
        await listener.stop();
        await http.stop();
        await opsServer?.stop();
      })(),
  };
}

/** What the relay's parts share once it started. */
interface RelayParts {
  readonly core: RelayCore;
  readonly metrics: RelayMetrics;
  readonly hopId: bigint;
  readonly now: () => number;
  readonly log: (line: string) => void;
}

function routingCore(
  options: RelayOptions,
  metrics: RelayMetrics,
  now: () => number,
  log: (line: string) => void,
): RelayCore {
  return new RelayCore({
    metrics,
    cacheSize: options.groupCacheSize,
    cacheMs: options.groupCacheMs ?? RELAY_DEFAULTS.RELAY_CACHE_MS,
    cacheBytes: options.groupCacheBytes ?? RELAY_DEFAULTS.RELAY_CACHE_BYTES,
    now,
    log,
    ...(options.idleMs !== undefined ? { idleMs: options.idleMs } : {}),
    orphanMs: options.orphanMs ?? RELAY_DEFAULTS.RELAY_PUBLISHER_GRACE_MS,
  });
}

// Auth off, or peers dialed without a credential: said once at startup.
function warnUnauthenticated(options: RelayOptions, log: (line: string) => void): void {
  if (options.verifier === undefined) {
    log(
      "relay: WARNING: SLUICE_AUTH_KEYS is not set; every session is admitted without a " +
        "credential, and any session whose URL says peer is taken for one: peers are unauthenticated",
    );
  }
  if ((options.peers?.length ?? 0) > 0 && options.peerCredential === undefined) {
    log(
      "relay: WARNING: RELAY_PEER_KEY is not set; PEERS are dialed without a credential " +
        "(only relays with auth off admit them)",
    );
  }
}

// The session layer and the peers it dials, each telling the other about GOAWAY and arrivals.
function sessionsAndPeers(
  options: RelayOptions,
  { core, metrics, hopId, now, log }: RelayParts,
): { sessions: RelaySessions; peers: Peers } {
  const sessions = new RelaySessions({
    core,
    metrics,
    verifier: options.verifier,
    cacheSize: options.groupCacheSize,
    ...(options.datagramTracks ? { datagramTracks: options.datagramTracks } : {}),
    ...(options.deliveryTurnMs ? { deliveryTurnMs: options.deliveryTurnMs } : {}),
    hopId,
    now,
    // Session lines are caused by peers (refusals, malformed streams): rate-limited,
    // so a flood of hostile sessions cannot flood the log.
    log: rateLimitedLog(log),
    ...(options.rttIntervalMs !== undefined ? { rttIntervalMs: options.rttIntervalMs } : {}),
    onPeerGoaway: (g) => peers.goaway(g),
  });
  const peers: Peers = new Peers({
    entries: options.peers ?? [],
    name: options.name ?? "relay",
    ...(options.peerCredential ? { credential: options.peerCredential } : {}),
    sessions,
    transport: options.peerTransport ?? peerTransport(options.peerCaCerts),
    ...(options.resolve ? { resolve: options.resolve } : {}),
    ...(options.peerDialTimeoutMs !== undefined
      ? { dialTimeoutMs: options.peerDialTimeoutMs }
      : {}),
    metrics,
    now,
    log,
  });
  return { sessions, peers };
}

/** How the bound listeners hand over what arrives. */
interface RelayEntrances {
  readonly admit: AdmitWebTransport;
  readonly onSession: (s: Session) => void;
  readonly handler: (req: Request, remote: Deno.NetAddr) => Response | Promise<Response>;
  readonly log: (line: string) => void;
}

// The UDP listener (QUIC, WebTransport) and the HTTPS server (endpoints, WebSocket) on one port.
function bindRelay(
  options: RelayOptions,
  { admit, onSession, handler, log }: RelayEntrances,
): Promise<{ listener: Listener; server: RunningServer }> {
  const ws = options.webSocketSetup;
  const incomingStreams = options.incomingStreams ?? RELAY_DEFAULTS.RELAY_INCOMING_STREAMS;
  const upgrade = qmuxUpgrade({
    protocols: WEB_PROTOCOLS,
    admit,
    onSession,
    ...(ws?.maxSettingUp !== undefined ? { maxSettingUp: ws.maxSettingUp } : {}),
    ...(ws?.timeoutMs !== undefined ? { setupTimeoutMs: ws.timeoutMs } : {}),
    // QMux's MAX_STREAMS works as QUIC's does, so a WebSocket connection gets the same grant
    // (the legacy `webtransport.*` format has no transport parameters and keeps its own).
    qmux: { params: { initialMaxStreamsUni: incomingStreams } },
  });
  return bindSamePort(
    options.port,
    (port) =>
      listen({
        hostname: options.hostname,
        port,
        certPem: options.tls.certPem,
        keyPem: options.tls.keyPem,
        // Native QUIC also takes IETF MoQ Transport clients (moq-lite is preferred).
        protocols: [...VERSIONS, ...IETF_PROTOCOLS],
        admitWebTransport: admit,
        onSession,
        maxConcurrentUnidirectionalStreams: incomingStreams,
      }),
    (port) =>
      startHttpServer(
        (req, info) => isWebSocketUpgrade(req) ? upgrade(req, info) : handler(req, info.remoteAddr),
        {
          hostname: options.hostname,
          port,
          tls: { cert: options.tls.certPem, key: options.tls.keyPem },
          onError: (e: unknown) => {
            log(`relay: HTTP handler failed: ${errorStack(e)}`);
            return problemResponse(500, "The relay failed to answer; see its log");
          },
        },
      ),
  );
}

// What the operator should know once the relay listens.
function warnAtStart(options: RelayOptions, trims: boolean, log: (line: string) => void): void {
  if (!trims) {
    log(
      "relay: memory freed after a burst of sessions stays with the process; run with --allow-ffi (glibc) to return it",
    );
  }
  const ipv4Only = ipv4OnlyReason(options.hostname);
  if (ipv4Only) log(`relay: warning: every interface (:port) is 0.0.0.0, IPv4 only: ${ipv4Only}`);
  if (options.pprof) {
    log(
      "relay: RELAY_PPROF=1: /debug/pprof/* is exposed; bind RELAY_ADDR to loopback or a trusted interface only",
    );
  }
}
