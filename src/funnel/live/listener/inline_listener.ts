import { errorText } from "../../../error_text/mod.ts";
import type { TrackPatterns } from "../../../path/mod.ts";
import { type OriginPolicy, problemResponse, startHttpServer } from "../../../http/mod.ts";
import { bindSamePort, qmuxUpgrade, webTransportAdmission } from "../../../serving/mod.ts";
import { type Logger, rateLimitedLog } from "../../../log/mod.ts";
import { startMemoryTrimmer } from "../../../heap/mod.ts";
import { accept, DeliveryTurns, MoqError, type MoqSession, VERSIONS } from "../../../moq/mod.ts";
import { listen } from "../../../transport/mod.ts";
import {
  type AdmitWebTransport,
  isWebSocketUpgrade,
  type Session,
} from "../../../transport/mod.ts";
import { admitSubscriber, type CredentialCheck, mayRead } from "./credential_check.ts";
import type { LivePublisher } from "../publisher.ts";

/** Options of {@linkcode startLiveListener}. */
export interface LiveListenerOptions {
  /** Interface to bind. */
  readonly hostname: string;
  /** UDP port, and the same TCP port for WebSocket (0 picks one). */
  readonly port: number;
  /** Certificate and key, PEM. */
  readonly certPem: string;
  /** Private key, PEM. */
  readonly keyPem: string;
  /** The tracks to serve. */
  readonly publisher: LivePublisher;
  /** Credential verifier; undefined admits every subscriber. */
  readonly verifier: CredentialCheck | undefined;
  /** CORS_ALLOWED_ORIGINS, applied to the Origin of WebTransport and WebSocket sessions. */
  readonly cors: OriginPolicy;
  /** Where session events go. */
  readonly log: Logger;
  /** Per-subscriber queue bound in groups before it skips to the latest (default 32). */
  readonly maxGroupQueue?: number;
  /**
   * Tracks whose single-frame groups go to subscribers (native QUIC and
   * WebTransport) as QUIC datagrams where they fit (default none).
   */
  readonly datagramTracks?: TrackPatterns;
  /** Told the number of open sessions whenever it changes. */
  readonly onSessions?: (count: number) => void;
}

/** A running MoQ listener. */
export interface LiveListener {
  /** The bound address: UDP (native QUIC, WebTransport) and TCP (WebSocket) share the port. */
  readonly addr: Deno.NetAddr;
  /** Sessions open now. */
  readonly sessions: number;
  /** Closes every session and the socket. */
  stop(): Promise<void>;
}

/**
 * Serves the publisher's tracks to subscribers that dial the funnel
 * directly, over native QUIC (moq-lite-05/04) and WebTransport on one UDP
 * port, and QMux over WebSocket (`wss://`) on the same TCP port. With a
 * verifier, a session needs a credential with a fetch or subscribe scope:
 * WebTransport and WebSocket are refused with 401/403 before they are
 * accepted; native QUIC learns the URL from SETUP and is closed with the
 * unauthorized code. Each subscription is checked against the scope too.
 *
 * @example
 * ```ts
 * const live = await startLiveListener({ hostname: "0.0.0.0", port: 4433, certPem, keyPem,
 *   publisher, verifier: undefined, cors: SAME_ORIGIN_ONLY, log });
 * await live.stop();
 * ```
 */
export async function startLiveListener(options: LiveListenerOptions): Promise<LiveListener> {
  const { publisher, verifier, log } = options;
  // Lines caused by peers (refusals, malformed streams) are rate-limited, so
  // hostile sessions cannot flood the log.
  const refusedLog = rateLimitedLog((line) => log.info(line));
  const sessionLog = rateLimitedLog((line) => log.debug(line));
  // After a burst of sessions, freed QUIC and TLS state goes back to the system.
  const trimmer = startMemoryTrimmer();
  const live = new Set<MoqSession>();
  const tasks = new Set<Promise<void>>();
  // Under overload every subscriber gets its share, and new sessions get set up between turns.
  const turns = new DeliveryTurns();
  let stopped = false;

  const serveSession = async (session: Session): Promise<void> => {
    let moq: MoqSession;
    try {
      moq = await accept(session, {
        announcer: publisher.announcer,
        // Subscribers publish nothing into the funnel.
        acceptAnnounce: () => false,
        // The subscriber sees and reads what its credential grants.
        admit: async (s) => {
          try {
            const grant = await admitSubscriber(s.url, verifier);
            return {
              announceFilter: (path) => mayRead(grant, path),
              serve: (request) =>
                mayRead(grant, request.path, request.track)
                  ? publisher.serve(request)
                  : "unauthorized",
            };
          } catch (error) {
            refusedLog(`MoQ subscriber ${s.remote} refused: ${errorText(error)}`);
            return false;
          }
        },
        maxGroupQueue: options.maxGroupQueue ?? 32,
        deliveryTurns: turns,
        ...(options.datagramTracks && !options.datagramTracks.empty
          ? {
            datagrams: (path: string, track: string) =>
              options.datagramTracks!.matches(path, track),
          }
          : {}),
        log: sessionLog,
      });
    } catch (error) {
      if (error instanceof MoqError) return; // refused, or never set up
      throw error;
    }
    if (stopped) {
      moq.close(0, "funnel stopping");
      return;
    }
    live.add(moq);
    options.onSessions?.(live.size);
    log.debug(`MoQ subscriber ${moq.remote} connected (${session.transport}, ${moq.version})`);
    const info = await moq.closed;
    live.delete(moq);
    options.onSessions?.(live.size);
    log.debug(
      `MoQ subscriber ${moq.remote} left (${info.code}${info.reason ? ` ${info.reason}` : ""})`,
    );
  };

  const onSession = (session: Session): void => {
    trimmer.track(session);
    if (stopped) {
      session.close(0, "funnel stopping");
      return;
    }
    const task = serveSession(session).catch((error) => {
      log.error(`MoQ session ${session.remote} failed`, error);
    });
    tasks.add(task);
    task.finally(() => tasks.delete(task));
  };
  // Unset CORS_ALLOWED_ORIGINS admits only the listener's own origin and clients that send none.
  const admitOpen = webTransportAdmission({
    protocols: VERSIONS,
    origins: options.cors,
    admitCredential: (url) => admitSubscriber(url, verifier),
  });
  // A stopping listener takes no new sessions: a WebTransport CONNECT and a WebSocket upgrade
  // are both refused with 503 rather than accepted and closed.
  const admit: AdmitWebTransport = (req) =>
    stopped ? { status: 503, reason: "The funnel is stopping" } : admitOpen(req);
  const upgrade = qmuxUpgrade({ protocols: VERSIONS, admit, onSession });
  const { listener, server } = await bindSamePort(options.port, (port) =>
    listen({
      hostname: options.hostname,
      port,
      certPem: options.certPem,
      keyPem: options.keyPem,
      protocols: VERSIONS,
      admitWebTransport: admit,
      onSession,
    }), (port) =>
    startHttpServer(
      (req, info) =>
        isWebSocketUpgrade(req)
          ? upgrade(req, info)
          : problemResponse(404, "This port serves MoQ: WebSocket upgrades only"),
      {
        hostname: options.hostname,
        port,
        tls: { cert: options.certPem, key: options.keyPem },
        onError: (error) => {
          log.error("WebSocket upgrade failed", error);
          return problemResponse(500, "The MoQ listener failed to answer");
        },
      },
    ));
  let stopping: Promise<void> | undefined;
  return {
    addr: listener.addr,
    get sessions() {
      return live.size;
    },
    stop: () =>
      stopping ??= (async () => {
        stopped = true;
        trimmer.stop();
        for (const moq of live) moq.close(0, "funnel stopping");
        await listener.stop();
        await server.stop();
        await Promise.allSettled([...tasks]);
      })(),
  };
}
