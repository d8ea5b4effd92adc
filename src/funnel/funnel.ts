import { createVerifier, keySourceFrom, type Verifier } from "../auth/mod.ts";
import type { FunnelConfig } from "../config/mod.ts";
import { formatListenAddress, funnelExposureWarning } from "../config/mod.ts";
import { type RunningServer, startHttpServer } from "../http/mod.ts";
import { ipv4OnlyReason } from "../transport/mod.ts";
import {
  type CommitReader,
  describeLedgerLocation,
  Ledger,
  type LedgerBackend,
  type NanoClock,
  systemNanoClock,
} from "../ledger/mod.ts";
import { consoleLogger, type Logger } from "../log/mod.ts";
import type { Counter } from "../metrics/mod.ts";
import { type LiveConfig, type LiveOptions, type LiveSide, startLive } from "./live/mod.ts";
import { RecordFetcher } from "./live/mod.ts";
import { StreamService } from "../durable_streams/mod.ts";
import { funnelHandler } from "./routes.ts";
import { FunnelService } from "./service.ts";
import { PostTracing } from "./post_trace.ts";
import {
  commitCounter,
  createFunnelMetrics,
  errorCounter,
  type FunnelMetrics,
  meteredHandler,
  meteredReader,
} from "./metrics/mod.ts";
import { startMetricsServer } from "./serve_metrics.ts";
import { type RetentionLoop, startRetentionLoop } from "./retention_loop.ts";
import { notReady, openStorage, restoreTracks } from "./storage.ts";

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
  /**
   * Also reads the ledger's commit feed (every created track and committed
   * batch), subscribed before the recorded tracks are restored.
   */
  readonly reader?: CommitReader;
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
 * tells the ledger's commit readers of every previously recorded track (as
 * stored: announced, opened when first used).
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
  // Storage that cannot be reached yet is waited for: the funnel starts, answering 503.
  const backend = deps.backend ?? await openStorage(config, log);
  const clock = deps.clock ?? systemNanoClock();
  const ledger = new Ledger(backend, {
    clock,
    ...(deps.ledgerDeadlineMs !== undefined ? { deadlineMs: deps.ledgerDeadlineMs } : {}),
  });
  // Each part that reads commits subscribes to the ledger's feed as it is built.
  ledger.commits.subscribe(commitCounter(metrics, log));
  let verifier: Verifier | undefined = deps.verifier;
  let servers: FunnelServers | undefined;
  let live: LiveSide | undefined;
  let retention: RetentionLoop | undefined;
  const restoring = new AbortController();
  try {
    verifier ??= config.auth ? await openVerifier(config.auth) : undefined;
    // FETCHes past the live tracks' recent groups are answered from the ledger.
    // Subscriptions' storage lookups are budgeted by the rate limits' clock.
    const records = new RecordFetcher(ledger, deps.now ? { lookups: { now: deps.now } } : {});
    live = await startLiveSide(config, deps, verifier, log, records, metrics);
    subscribeLive(ledger, live, metrics, clock);
    if (deps.reader) ledger.commits.subscribe(deps.reader);
    // Durable Streams readers wake at their track's commits, whoever wrote them.
    const streams = new StreamService({
      ledger,
      verifier,
      logError: (message, error) => log.error(message, error),
      ...(deps.bodyTimeoutMs !== undefined ? { bodyTimeoutMs: deps.bodyTimeoutMs } : {}),
      ...(config.publicOrigin !== undefined ? { publicOrigin: config.publicOrigin } : {}),
    });
    // With OTEL_DENO=true, each POST's commit and publish spans are timed by a reader of the
    // feed subscribed after the live side's.
    const tracing = PostTracing.start(backend.name);
    if (tracing) ledger.commits.subscribe(tracing.reader());
    const served = live.listener;
    const liveSide = live;
    metrics.registry.onCollect(() => {
      metrics.listenerSessions.set({}, served?.sessions ?? 0);
      metrics.ledgerOpenTracks.set({}, ledger.openTracks);
      const publisher = liveSide.publisher;
      countUpTo(metrics.subscriberSkipsTotal, "relay", publisher.skips);
      countUpTo(metrics.skippedRecordsTotal, "relay", publisher.skippedRecords);
      const limited = records.lookups.limited;
      countUpTo(metrics.trackLookupsLimitedTotal, "session", limited.session, "limit");
      countUpTo(metrics.trackLookupsLimitedTotal, "listener", limited.listener, "limit");
      countUpTo(metrics.trackLookupsLimitedTotal, "relay", limited.relay, "limit");
      if (!served) return;
      countUpTo(metrics.subscriberSkipsTotal, "listener", served.skips);
      countUpTo(metrics.skippedRecordsTotal, "listener", served.skippedRecords);
    });
    // Follow before listing, so a track another process creates meanwhile is not missed.
    await ledger.follow();
    await restoreTracks(ledger, backend, restoring.signal, log);
    const service = new FunnelService({
      ledger,
      senderLimit: config.senderLimit,
      trackLimit: config.trackLimit,
      ...(deps.now ? { now: deps.now } : {}),
    });
    retention = startRetentionLoop(ledger, config.retention, clock, metrics, log);
    servers = await startServers(config, deps, {
      service,
      verifier,
      streams,
      tracing,
      metrics,
      log,
      backend,
    });
  } catch (error) {
    restoring.abort();
    await retention?.stop();
    await servers?.stop();
    await live?.stop();
    verifier?.close();
    await ledger.close();
    throw error;
  }
  const running = servers;
  const liveSide = live;
  const retained = retention;
  // Dial only after restore, so the first relay session announces every recorded broadcast.
  liveSide.connect();
  return {
    addr: running.http.addr,
    summary: summaryLines(config, running, liveSide, ledger),
    ledger,
    live: liveSide,
    metricsAddr: running.metrics?.addr,
    stop: async () => {
      restoring.abort();
      await running.stop();
      await retained?.stop();
      await liveSide.stop();
      verifier?.close();
      await ledger.close();
    },
  };
}

/** Brings a counter kept elsewhere (the publishers count their skips) up to `total`. */
function countUpTo(counter: Counter, value: string, total: number, label = "sink"): void {
  const labels = { [label]: value };
  const behind = total - counter.value(labels);
  if (behind > 0) counter.inc(labels, behind);
}

/** The verifier for SLUICE_AUTH_KEYS (its cache file and bearer token, aud and iss). */
function openVerifier(auth: NonNullable<FunnelConfig["auth"]>): Promise<Verifier> {
  return createVerifier(
    keySourceFrom(auth.keys, {
      ...(auth.cacheFile ? { cacheFile: auth.cacheFile } : {}),
      ...(auth.bearerToken ? { bearerToken: auth.bearerToken } : {}),
    }),
    {
      ...(auth.audience ? { audience: auth.audience } : {}),
      ...(auth.issuer ? { issuer: auth.issuer } : {}),
    },
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
    lookupTrack: (path, asker) => records.lookup(path, asker),
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

/**
 * The live side reads the ledger's commits: the relay session's tracks and,
 * when serving, the own listener's worker, each in its own right, timed.
 */
function subscribeLive(
  ledger: Ledger,
  live: LiveSide,
  metrics: FunnelMetrics,
  clock: NanoClock,
): void {
  const publisher = live.publisher;
  ledger.commits.subscribe(
    live.relay ? meteredReader(publisher, "relay", metrics, clock) : publisher,
  );
  if (live.listener) {
    ledger.commits.subscribe(meteredReader(live.listener, "listener", metrics, clock));
  }
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
  readonly backend: LedgerBackend;
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
      health: () => ({ ledger: parts.backend.name }),
      notReady: () => notReady(parts.backend),
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
    ...optional(funnelExposureWarning(config)),
  ];
}

const optional = (line: string | undefined): string[] => line === undefined ? [] : [line];

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
