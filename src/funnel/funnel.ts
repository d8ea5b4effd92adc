import { createVerifier, keySourceFrom, type Verifier } from "../auth/mod.ts";
import type { FunnelConfig } from "../config/mod.ts";
import { formatListenAddress } from "../config/mod.ts";
import { type RunningServer, startHttpServer } from "../http/mod.ts";
import {
  describeLedgerLocation,
  Ledger,
  type LedgerBackend,
  type NanoClock,
  openBackend,
  systemNanoClock,
} from "../ledger/mod.ts";
import { consoleLogger, type Logger } from "../log/mod.ts";
import { type LiveConfig, type LiveOptions, type LiveSide, startLive } from "./live/mod.ts";
import { RecordFetcher } from "./live/mod.ts";
import { StreamService } from "../streams/mod.ts";
import { funnelHandler } from "./routes.ts";
import { FunnelService } from "./service.ts";
import { fanOut, type RecordSink } from "./sink.ts";
import { PostTracing } from "./post_trace.ts";
import { createFunnelMetrics, errorCounter, meteredHandler } from "./metrics/mod.ts";
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
  let sink: RecordSink | undefined;
  const clock = deps.clock ?? systemNanoClock();
  const metrics = createFunnelMetrics();
  const countError = errorCounter(metrics);
  const backend = deps.backend ?? await openBackend(config.ledger, config.storeCredentials);
  const ledger = new Ledger(backend, {
    clock,
    ...(deps.ledgerDeadlineMs !== undefined ? { deadlineMs: deps.ledgerDeadlineMs } : {}),
    onCommit: (track, entries) => sink?.committed(track.path, entries),
    onBatch: (_track, count) => {
      metrics.recordsCommittedTotal.inc({}, count);
      metrics.commitBatchRecords.observe({}, count);
    },
    // Shared ledgers: other processes' tracks and records are published here too.
    onTrackLearned: (track) => sink?.trackCreated(track.path, track.newest),
    onLearned: (_track, count) => metrics.recordsLearnedTotal.inc({}, count),
    onFollowError: (error) => {
      countError(error);
      log.warn(`Reading other funnels' commits failed (retrying): ${(error as Error).message}`);
    },
  });
  let verifier: Verifier | undefined = deps.verifier;
  let server: RunningServer | undefined;
  let metricsServer: RunningServer | undefined;
  let live: LiveSide | undefined;
  try {
    if (!verifier && config.auth) {
      verifier = await createVerifier(
        keySourceFrom(config.auth.keys, {
          ...(config.auth.cacheFile ? { cacheFile: config.auth.cacheFile } : {}),
          ...(config.auth.bearerToken ? { bearerToken: config.auth.bearerToken } : {}),
        }),
      );
    }
    // FETCHes past the live tracks' recent groups are answered from the ledger.
    const records = new RecordFetcher(ledger);
    live = await startLive(liveConfig(config), verifier, log, {
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
    const liveSink = fanOut(meteredLive(live, metrics, clock), records);
    // Durable Streams readers wake at their track's commits, whoever wrote them.
    const streams = new StreamService({
      ledger,
      verifier,
      logError: (message, error) => log.error(message, error),
    });
    sink = fanOut(deps.sink ? fanOut(liveSink, deps.sink) : liveSink, streams);
    // With OTEL_DENO=true, each POST's commit and publish spans are timed at this sink.
    const tracing = PostTracing.start(backend.name);
    if (tracing) sink = tracing.sink(sink);
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
    const render = () => metrics.registry.renderEach();
    const handler = meteredHandler(
      funnelHandler({
        service,
        verifier,
        cors: config.cors,
        logError: (message, error) => log.error(message, error),
        health: () => ({ ledger: backend.name }),
        streams: (request) => streams.handle(request),
        onError: countError,
        tracing,
        // With FUNNEL_METRICS_ADDR the metrics stay on that (internal) address only.
        ...(config.metrics ? {} : { metrics: render }),
        ...(deps.bodyTimeoutMs !== undefined ? { bodyTimeoutMs: deps.bodyTimeoutMs } : {}),
      }),
      metrics,
    );
    if (config.metrics) metricsServer = await startMetricsServer(config.metrics, render);
    server = await startHttpServer(
      handler,
      {
        hostname: config.ingest.hostname,
        port: config.ingest.port,
        onError: (error) => {
          log.error("Unhandled request error", error);
          return new Response(null, { status: 500 });
        },
      },
    );
  } catch (error) {
    await metricsServer?.stop();
    await live?.stop();
    verifier?.close();
    await ledger.close();
    throw error;
  }
  const running = server;
  const liveSide = live;
  // Dial only after restore, so the first relay session announces every recorded track.
  liveSide.connect();
  const summary = [
    `Ingest: http://${formatListenAddress(running.addr)}`,
    `Relay: ${liveSide.relayLine}`,
    `Serve: ${liveSide.serveLine}`,
    `Ledger: ${describeLedgerLocation(config.ledger)}${
      ledger.shared ? " (shared: other funnels on it publish and take the same tracks)" : ""
    }`,
    `Metrics: http://${formatListenAddress(metricsServer?.addr ?? running.addr)}/metrics`,
    `Auth: ${
      config.auth ? config.auth.keys : "off (every sender is accepted, with no sender name)"
    }`,
  ];
  return {
    addr: running.addr,
    summary,
    ledger,
    live: liveSide,
    metricsAddr: metricsServer?.addr,
    stop: async () => {
      await metricsServer?.stop();
      await running.stop();
      await liveSide.stop();
      verifier?.close();
      await ledger.close();
    },
  };
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
