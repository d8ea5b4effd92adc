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
} from "../ledger/mod.ts";
import { consoleLogger, type Logger } from "../log/mod.ts";
import { type LiveConfig, type LiveOptions, type LiveSide, startLive } from "./live/mod.ts";
import { RecordFetcher } from "./live/mod.ts";
import { StreamService } from "../streams/mod.ts";
import { funnelHandler } from "./routes.ts";
import { FunnelService } from "./service.ts";
import { fanOut, type RecordSink } from "./sink.ts";

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
  const backend = deps.backend ?? await openBackend(config.ledger, config.storeCredentials);
  const ledger = new Ledger(backend, {
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.ledgerDeadlineMs !== undefined ? { deadlineMs: deps.ledgerDeadlineMs } : {}),
    onCommit: (track, entries) => sink?.committed(track.path, entries),
  });
  let verifier: Verifier | undefined = deps.verifier;
  let server: RunningServer | undefined;
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
    });
    const liveSink = fanOut(live.sink, records);
    // Durable Streams readers wake at their track's commits, whoever wrote them.
    const streams = new StreamService({
      ledger,
      verifier,
      logError: (message, error) => log.error(message, error),
    });
    sink = fanOut(deps.sink ? fanOut(liveSink, deps.sink) : liveSink, streams);
    await restoreTracks(ledger, sink);
    const service = new FunnelService({
      ledger,
      sink,
      senderLimit: config.senderLimit,
      trackLimit: config.trackLimit,
      ...(deps.now ? { now: deps.now } : {}),
    });
    const handler = funnelHandler({
      service,
      verifier,
      cors: config.cors,
      logError: (message, error) => log.error(message, error),
      health: () => ({ ledger: backend.name }),
      streams: (request) => streams.handle(request),
      ...(deps.bodyTimeoutMs !== undefined ? { bodyTimeoutMs: deps.bodyTimeoutMs } : {}),
    });
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
    `Ledger: ${describeLedgerLocation(config.ledger)}`,
    `Auth: ${
      config.auth ? config.auth.keys : "off (every sender is accepted, with no sender name)"
    }`,
  ];
  return {
    addr: running.addr,
    summary,
    ledger,
    live: liveSide,
    stop: async () => {
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
