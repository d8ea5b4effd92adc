import { errorText } from "../../../error_text/mod.ts";
import type { TrackPatterns } from "../../../path/mod.ts";
import {
  type OriginPolicy,
  problemResponse,
  type RunningServer,
  startHttpServer,
} from "../../../http/mod.ts";
import { bindSamePort, qmuxUpgrade, webTransportAdmission } from "../../../listeners/mod.ts";
import { type Logger, rateLimitedLog } from "../../../log/mod.ts";
import { startMemoryTrimmer } from "../../../memory_trim/mod.ts";
import {
  accept,
  acceptIetf,
  DeliveryTurns,
  IETF_PROTOCOLS,
  IETF_WEB_PROTOCOLS,
  ietfDraftOf,
  type MoqAcceptOptions,
  MoqCode,
  MoqError,
  type MoqPeer,
  startLease,
  VERSIONS,
} from "../../../moq/mod.ts";
import { listen } from "../../../transport/mod.ts";
import {
  type AdmitWebTransport,
  isWebSocketUpgrade,
  type Session,
} from "../../../transport/mod.ts";
import {
  admitCredential,
  admitSubscriber,
  type CredentialCheck,
  mayRead,
  type SubscriberCredential,
} from "./credential_check.ts";
import type { Grant } from "../../../auth/mod.ts";
import type { LivePublisher } from "../publisher.ts";

// WebTransport and WebSocket sessions: moq-lite first, then the IETF drafts that have a token there.
const WEB_PROTOCOLS: readonly string[] = [...VERSIONS, ...IETF_WEB_PROTOCOLS];

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
  /** Current time in milliseconds, for credential leases (default Date.now). */
  readonly now?: () => number;
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
 * unauthorized code. Each subscription is checked against the scope too, and
 * the credential is checked again on every request: once it has expired or
 * its key has left the key set, the session is closed with the unauthorized
 * code, as it is when its `exp` passes (the lease the relay's sessions have).
 *
 * @example
 * ```ts
 * const live = await startLiveListener({ hostname: "0.0.0.0", port: 4433, certPem, keyPem,
 *   publisher, verifier: undefined, cors: SAME_ORIGIN_ONLY, log });
 * await live.stop();
 * ```
 */
export async function startLiveListener(options: LiveListenerOptions): Promise<LiveListener> {
  const sessions = new InlineSessions(options);
  const { listener, server } = await bindSamePort(
    options.port,
    (port) =>
      listen({
        hostname: options.hostname,
        port,
        certPem: options.certPem,
        keyPem: options.keyPem,
        // Native QUIC also takes IETF MoQ Transport subscribers (moq-lite is preferred).
        protocols: [...VERSIONS, ...IETF_PROTOCOLS],
        admitWebTransport: sessions.admitWebTransport,
        onSession: sessions.onSession,
      }),
    (port) => startUpgradeServer(options, port, sessions),
  );
  let stopping: Promise<void> | undefined;
  return {
    addr: listener.addr,
    get sessions() {
      return sessions.count;
    },
    stop: () =>
      stopping ??= (async () => {
        sessions.stopTaking();
        await listener.stop();
        await server.stop();
        await sessions.settled();
      })(),
  };
}

/** The TCP side of the port: WebSocket upgrades into QMux sessions, nothing else. */
function startUpgradeServer(
  options: LiveListenerOptions,
  port: number,
  sessions: InlineSessions,
): Promise<RunningServer> {
  const upgrade = qmuxUpgrade({
    protocols: WEB_PROTOCOLS,
    admit: sessions.admitWebTransport,
    onSession: sessions.onSession,
  });
  return startHttpServer(
    (req, info) =>
      isWebSocketUpgrade(req)
        ? upgrade(req, info)
        : problemResponse(404, "This port serves MoQ: WebSocket upgrades only"),
    {
      hostname: options.hostname,
      port,
      tls: { cert: options.certPem, key: options.keyPem },
      onError: (error) => {
        options.log.error("WebSocket upgrade failed", error);
        return problemResponse(500, "The MoQ listener failed to answer");
      },
    },
  );
}

/** The listener's MoQ sessions: admitted by credential, served from the publisher. */
class InlineSessions {
  readonly #options: LiveListenerOptions;
  // Lines caused by peers (refusals, malformed streams) are rate-limited, so
  // hostile sessions cannot flood the log.
  readonly #refusedLog: (line: string) => void;
  readonly #sessionLog: (line: string) => void;
  // After a burst of sessions, freed QUIC and TLS state goes back to the system.
  readonly #trimmer = startMemoryTrimmer();
  readonly #live = new Set<MoqPeer>();
  readonly #tasks = new Set<Promise<void>>();
  // Under overload every subscriber gets its share, and new sessions get set up between turns.
  readonly #turns = new DeliveryTurns();
  readonly #admitOpen: AdmitWebTransport;
  #stopped = false;

  constructor(options: LiveListenerOptions) {
    this.#options = options;
    this.#refusedLog = rateLimitedLog((line) => options.log.info(line));
    this.#sessionLog = rateLimitedLog((line) => options.log.debug(line));
    // Unset CORS_ALLOWED_ORIGINS admits only the listener's own origin and clients that send none.
    this.#admitOpen = webTransportAdmission({
      protocols: WEB_PROTOCOLS,
      origins: options.cors,
      admitCredential: (url) => admitSubscriber(url, options.verifier),
    });
  }

  /** Sessions open now. */
  get count(): number {
    return this.#live.size;
  }

  /**
   * WebTransport CONNECT and WebSocket upgrade admission. A stopping listener
   * takes no new sessions: both are refused with 503 rather than accepted and closed.
   */
  readonly admitWebTransport: AdmitWebTransport = (req) =>
    this.#stopped ? { status: 503, reason: "The funnel is stopping" } : this.#admitOpen(req);

  /** A transport session arrived: serve it until it ends. */
  readonly onSession = (session: Session): void => {
    this.#trimmer.track(session);
    if (this.#stopped) {
      session.close(0, "funnel stopping");
      return;
    }
    const task = this.#serve(session).catch((error) => {
      this.#options.log.error(`MoQ session ${session.remote} failed`, error);
    });
    this.#tasks.add(task);
    task.finally(() => this.#tasks.delete(task));
  };

  /** Takes no new sessions and closes the open ones. */
  stopTaking(): void {
    this.#stopped = true;
    this.#trimmer.stop();
    for (const moq of this.#live) moq.close(0, "funnel stopping");
  }

  /** Resolves once every session's task has ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#tasks]);
  }

  async #serve(session: Session): Promise<void> {
    let moq: MoqPeer;
    // An IETF MoQ Transport subscriber (by its negotiated protocol) gets the IETF session.
    const start = ietfDraftOf(session.protocol) === undefined ? accept : acceptIetf;
    try {
      moq = await start(session, this.#moqOptions());
    } catch (error) {
      if (error instanceof MoqError) return; // refused, or never set up
      throw error;
    }
    if (this.#stopped) {
      moq.close(0, "funnel stopping");
      return;
    }
    const { log, onSessions } = this.#options;
    this.#live.add(moq);
    onSessions?.(this.#live.size);
    log.debug(`MoQ subscriber ${moq.remote} connected (${session.transport}, ${moq.version})`);
    const info = await moq.closed;
    this.#live.delete(moq);
    onSessions?.(this.#live.size);
    log.debug(
      `MoQ subscriber ${moq.remote} left (${info.code}${info.reason ? ` ${info.reason}` : ""})`,
    );
  }

  #moqOptions(): MoqAcceptOptions {
    const { publisher, verifier, datagramTracks } = this.#options;
    return {
      announcer: publisher.announcer,
      // Subscribers publish nothing into the funnel.
      acceptAnnounce: () => false,
      // The subscriber sees and reads what its credential grants, for as long as it is valid.
      admit: async (s) => {
        let credential: SubscriberCredential;
        try {
          credential = await admitCredential(s.url, verifier);
        } catch (error) {
          this.#refusedLog(`MoQ subscriber ${s.remote} refused: ${errorText(error)}`);
          return false;
        }
        const { grant } = credential;
        const lease = startLease(s, grant, this.#options.now ?? Date.now, this.#refusedLog);
        void s.closed.then(() => lease.stop());
        return {
          announceFilter: (path) => mayRead(grant, path),
          serve: async (request) => {
            let current: Grant | undefined;
            try {
              current = await credential.recheck();
            } catch (error) {
              // The credential died after admission: nothing more is served on it.
              this.#refusedLog(`MoQ subscriber ${s.remote} ended: ${errorText(error)}`);
              s.close(MoqCode.Unauthorized, "credential no longer valid");
              return "unauthorized";
            }
            return mayRead(current, request.path, request.track)
              ? publisher.serve(request)
              : "unauthorized";
          },
        };
      },
      maxGroupQueue: this.#options.maxGroupQueue ?? 32,
      deliveryTurns: this.#turns,
      ...(datagramTracks && !datagramTracks.empty
        ? { datagrams: (path: string, track: string) => datagramTracks.matches(path, track) }
        : {}),
      log: this.#sessionLog,
    };
  }
}
