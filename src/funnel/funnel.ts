import { createVerifier, keySourceFrom, type Verifier } from "../auth/mod.ts";
import type { FunnelConfig } from "../config/mod.ts";
import { formatListenAddress } from "../config/mod.ts";
import { type RunningServer, startHttpServer } from "../http/mod.ts";
import { ipv4OnlyReason } from "../transport/mod.ts";
import {
  describeLedgerLocation,
  Ledger,
  type LedgerBackend,
  type LedgerEntry,
  type NanoClock,
  openBackend,
  systemNanoClock,
  type TrackPath,
} from "../ledger/mod.ts";
import { consoleLogger, type Logger } from "../log/mod.ts";
import { type LiveConfig, type LiveOptions, type LiveSide, startLive } from "./live/mod.ts";
import { RecordFetcher } from "./live/mod.ts";
import { StreamService } from "../streams/mod.ts";
import { funnelHandler } from "./routes.ts";
import { FunnelService } from "./service.ts";
import { fanOut, type RecordSink } from "./sink.ts";
import { PostTracing } from "./post_trace.ts";
import {
  createFunnelMetrics,
  errorCounter,
  type FunnelMetrics,
  meteredHandler,
} from "./metrics/mod.ts";
import { meteredLive, startMetricsServer } from "./serve_metrics.ts";

/** Things a test or embedder may supply instead of the defaults. */
export interface FunnelDependencies {
  /** Ledger backend; opened from `config.ledger` when absent. */
  readonly backend?: LedgerBackend;
  /** Credential verifier; built from `config.auth` when absent. */
  readonly verifier?: Verifier;
  /** Commit clock in Unix nanoseconds. */
  readonly clock?: NanoClock;
  /** Millisecond clock for rate limits. */
  readonly now?: () => number;
  /** Also told of every created track and committed batch, after the live publisher. */
  readonly sink?: RecordSink;
  /** Knobs of the live side (redial timers, credential lifetime, certificate pins). */
  readonly live?: LiveOptions;
  /** Where the funnel logs (default: the console). */
  readonly log?: Logger;
  /** How long a POST body may take to arrive, ms (default 10 s). */
  readonly bodyTimeoutMs?: number;
  /** Longest wait for one storage call before answering 503, ms (default 5 s). */
  readonly ledgerDeadlineMs?: number;
}

/** A running funnel. */
export interface RunningFunnel {
  /** The HTTP ingest address actually bound. */
  readonly addr: Deno.NetAddr;
  /** The startup summary lines (Ingest, Relay, Serve, Ledger, Auth). */
  readonly summary: readonly string[];
  /** The ledger, for embedding and tests. */
  readonly ledger: Ledger;
  /** The live side: publisher, own MoQ listener and relay session. */
  readonly live: LiveSide;
  /** The metrics listener's address, when FUNNEL_METRICS_ADDR is set. */
  readonly metricsAddr: Deno.NetAddr | undefined;
  /** Stops HTTP, waits for in-flight requests, closes the ledger and key source. */
  stop(): Promise<void>;
}

/**
 * Starts the funnel: opens the ledger, the key set and the HTTP API, and
 * announces every previously recorded track to the sink.
 *
 * @example
 * ```ts
 * const funnel = await startFunnel(loadFunnelConfig({ FUNNEL_ADDR: ":8090" }));
 * console.log(funnel.summary.join("\n"));
 * ```
 */
export async function startFunnel(
  config: FunnelConfig,
  deps: FunnelDependencies = {},
): Promise<RunningFunnel> {
  const log = deps.log ?? consoleLogger("funnel");
  const metrics = createFunnelMetrics();
  // The ledger is opened before what its commits feed (which reads the ledger back): commits
  // reach the publishing sink through this switch once it is built.
  const commits = new SinkSwitch();
  const backend = deps.backend ?? await openBackend(config.ledger, config.storeCredentials);
  const clock = deps.clock ?? systemNanoClock();
  const ledger = openLedger(backend, deps.ledgerDeadlineMs, clock, metrics, commits, log);
  let verifier: Verifier | undefined = deps.verifier;
  let servers: FunnelServers | undefined;
  let live: LiveSide | undefined;
  try {
    verifier ??= config.auth ? await openVerifier(config.auth) : undefined;
    // FETCHes past the live tracks' recent groups are answered from the ledger.
    const records = new RecordFetcher(ledger);
    live = await startLiveSide(config, deps, verifier, log, records, metrics);
    // Durable Streams readers wake at their track's commits, whoever wrote them.
    const streams = new StreamService({
      ledger,
      verifier,
      logError: (message, error) => log.error(message, error),
    });
    // With OTEL_DENO=true, each POST's commit and publish spans are timed at this sink.
    const tracing = PostTracing.start(backend.name);
    const sink = publishingSink(live, records, streams, deps.sink, tracing, metrics, clock);
    commits.to(sink);
    const served = live.listener;
    metrics.registry.onCollect(() => metrics.listenerSessions.set({}, served?.sessions ?? 0));
    // Follow before listing, so a track another process creates meanwhile is not missed.
    await ledger.follow();
    await restoreTracks(ledger, sink);
    const service = new FunnelService({
      ledger,
      sink,
      senderLimit: config.senderLimit,
      trackLimit: config.trackLimit,
      ...(deps.now ? { now: deps.now } : {}),
    });
    servers = await startServers(config, deps, {
      service,
      verifier,
      streams,
      tracing,
      metrics,
      log,
      backend: backend.name,
    });
  } catch (error) {
    await servers?.stop();
    await live?.stop();
    verifier?.close();
    await ledger.close();
    throw error;
  }
  const running = servers;
  const liveSide = live;
  // Dial only after restore, so the first relay session announces every recorded track.
  liveSide.connect();
  return {
    addr: running.http.addr,
    summary: summaryLines(config, running, liveSide, ledger),
    ledger,
    live: liveSide,
    metricsAddr: running.metrics?.addr,
    stop: async () => {
      await running.stop();
      await liveSide.stop();
      verifier?.close();
      await ledger.close();
    },
  };
}

/** Forwards to a sink set after it was handed out (the ledger's commits, before the live side exists). */
class SinkSwitch implements RecordSink {
  #target: RecordSink | undefined;

  /** Everything from now on goes to `target`. */
  to(target: RecordSink): void {
    this.#target = target;
  }

  trackCreated(path: TrackPath, newest: LedgerEntry | undefined): void {
    this.#target?.trackCreated(path, newest);
  }

  committed(path: TrackPath, entries: readonly LedgerEntry[]): void {
    this.#target?.committed(path, entries);
  }
}

/** The ledger, telling `commits` of this process's commits and (shared) of other processes'. */
function openLedger(
  backend: LedgerBackend,
  deadlineMs: number | undefined,
  clock: NanoClock,
  metrics: FunnelMetrics,
  commits: RecordSink,
  log: Logger,
): Ledger {
  const countError = errorCounter(metrics);
  return new Ledger(backend, {
    clock,
    ...(deadlineMs !== undefined ? { deadlineMs } : {}),
    onCommit: (track, entries) => commits.committed(track.path, entries),
    onBatch: (_track, count) => {
      metrics.recordsCommittedTotal.inc({}, count);
      metrics.commitBatchRecords.observe({}, count);
    },
    // Shared ledgers: other processes' tracks and records are published here too.
    onTrackLearned: (track) => commits.trackCreated(track.path, track.newest),
    onLearned: (_track, count) => metrics.recordsLearnedTotal.inc({}, count),
    onFollowError: (error) => {
      countError(error);
      log.warn(`Reading other funnels' commits failed (retrying): ${(error as Error).message}`);
    },
  });
}

/** The verifier for SLUICE_AUTH_KEYS (and its cache file and bearer token). */
function openVerifier(auth: NonNullable<FunnelConfig["auth"]>): Promise<Verifier> {
  return createVerifier(
    keySourceFrom(auth.keys, {
      ...(auth.cacheFile ? { cacheFile: auth.cacheFile } : {}),
      ...(auth.bearerToken ? { bearerToken: auth.bearerToken } : {}),
    }),
  );
}

/** The relay session and the own listener, with the relay session's state in the metrics. */
function startLiveSide(
  config: FunnelConfig,
  deps: FunnelDependencies,
  verifier: Verifier | undefined,
  log: Logger,
  records: RecordFetcher,
  metrics: FunnelMetrics,
): Promise<LiveSide> {
  return startLive(liveConfig(config), verifier, log, {
    fetchEntry: (path, seq, signal) => records.fetch(path, seq, signal),
    ...deps.live,
    onRelayState: (state) => {
      for (const s of ["connecting", "connected", "reconnecting", "stopped"]) {
        metrics.relayState.set({ state: s }, s === state ? 1 : 0);
      }
      if (state === "reconnecting") metrics.relayReconnectsTotal.inc();
      deps.live?.onRelayState?.(state);
    },
  });
}

/** Everything a commit is told to, in order: live delivery, FETCH answers, an embedder, streams. */
function publishingSink(
  live: LiveSide,
  records: RecordFetcher,
  streams: StreamService,
  embedder: RecordSink | undefined,
  tracing: PostTracing | undefined,
  metrics: FunnelMetrics,
  clock: NanoClock,
): RecordSink {
  const liveSink = fanOut(meteredLive(live, metrics, clock), records);
  const sink = fanOut(embedder ? fanOut(liveSink, embedder) : liveSink, streams);
  return tracing ? tracing.sink(sink) : sink;
}

/** The funnel's HTTP servers: the API, and /metrics on its own address when configured. */
interface FunnelServers {
  readonly http: RunningServer;
  readonly metrics: RunningServer | undefined;
  stop(): Promise<void>;
}

/** What the HTTP API serves. */
interface ServedParts {
  readonly service: FunnelService;
  readonly verifier: Verifier | undefined;
  readonly streams: StreamService;
  readonly tracing: PostTracing | undefined;
  readonly metrics: FunnelMetrics;
  readonly log: Logger;
  readonly backend: string;
}

/** Starts the HTTP API (and the metrics listener, with FUNNEL_METRICS_ADDR). */
async function startServers(
  config: FunnelConfig,
  deps: FunnelDependencies,
  parts: ServedParts,
): Promise<FunnelServers> {
  const { metrics, log } = parts;
  const render = () => metrics.registry.renderEach();
  const handler = meteredHandler(
    funnelHandler({
      service: parts.service,
      verifier: parts.verifier,
      cors: config.cors,
      logError: (message, error) => log.error(message, error),
      health: () => ({ ledger: parts.backend }),
      streams: (request) => parts.streams.handle(request),
      onError: errorCounter(metrics),
      tracing: parts.tracing,
      // With FUNNEL_METRICS_ADDR the metrics stay on that (internal) address only.
      ...(config.metrics ? {} : { metrics: render }),
      ...(deps.bodyTimeoutMs !== undefined ? { bodyTimeoutMs: deps.bodyTimeoutMs } : {}),
    }),
    metrics,
  );
  const metricsServer = config.metrics
    ? await startMetricsServer(config.metrics, render)
    : undefined;
  try {
    const http = await startHttpServer(handler, {
      hostname: config.ingest.hostname,
      port: config.ingest.port,
      onError: (error) => {
        log.error("Unhandled request error", error);
        return new Response(null, { status: 500 });
      },
    });
    return {
      http,
      metrics: metricsServer,
      stop: async () => {
        await metricsServer?.stop();
        await http.stop();
      },
    };
  } catch (error) {
    await metricsServer?.stop();
    throw error;
  }
}

/** The startup summary: Ingest, Relay, Serve, Ledger, Metrics, Auth. */
function summaryLines(
  config: FunnelConfig,
  servers: FunnelServers,
  live: LiveSide,
  ledger: Ledger,
): string[] {
  // Where `:port` ends up IPv4 only, the line says so.
  const only = (hostname: string): string => {
    const why = ipv4OnlyReason(hostname);
    return why ? ` (IPv4 only: ${why})` : "";
  };
  return [
    `Ingest: http://${formatListenAddress(servers.http.addr)}${only(config.ingest.hostname)}`,
    `Relay: ${live.relayLine}`,
    `Serve: ${live.serveLine}`,
    `Ledger: ${describeLedgerLocation(config.ledger)}${
      ledger.shared ? " (shared: other funnels on it publish and take the same tracks)" : ""
    }`,
    `Metrics: http://${formatListenAddress(servers.metrics?.addr ?? servers.http.addr)}/metrics${
      only((config.metrics ?? config.ingest).hostname)
    }`,
    `Auth: ${
      config.auth ? config.auth.keys : "off (every sender is accepted, with no sender name)"
    }`,
  ];
}

// The spec's restore: list the store once and publish each track with its latest record.
async function restoreTracks(ledger: Ledger, sink: RecordSink): Promise<void> {
  for (const path of await ledger.tracks()) {
    const track = await ledger.track(path, false);
    if (track) sink.trackCreated(path, track.newest);
  }
}

// The live side takes only what it uses: where to publish, what to serve, and CORS.
function liveConfig(config: FunnelConfig): LiveConfig {
  const serve = config.serve && {
    hostname: config.serve.hostname,
    port: config.serve.port,
    certFile: config.certFile,
    keyFile: config.keyFile,
    defaultCertificate: config.defaultCertificate,
    datagramTracks: config.datagramTracks,
  };
  return { relay: config.relay, serve, cors: config.cors };
}
