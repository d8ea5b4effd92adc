import { tokenFromUrl } from "../../auth/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import type { Logger } from "../../log/mod.ts";
import { goawayRedirect, type IetfDraft, type MoqPeer } from "../../moq/mod.ts";
import { normalizePath, prefixCovers } from "../../path/mod.ts";
import { connectRelayMoq, relayProtocols } from "./relay_moq.ts";
import {
  connectSession,
  IDLE_TIMEOUT_MS,
  keepAliveFor,
  type Session,
  SESSION_SCHEMES,
} from "../../transport/mod.ts";
import type { LivePublisher } from "./publisher.ts";

/** The relay session's state, as logged and reported. */
export type RelayState = "connecting" | "connected" | "reconnecting" | "stopped";

/** A credential for one relay session. */
export interface RelayCredential {
  /** The token, sent as the `jwt` query parameter. */
  readonly token: string;
  /** When it expires, ms since the epoch; the session is ended then. */
  readonly expiresAt: number;
}

/** Timer functions for the redial delay and credential expiry (tests inject their own). */
export type RedialTimers = Timers;

/** Options of {@linkcode RelayClient}. */
export interface RelayClientOptions {
  /**
   * RELAY_URL: `https:` dials WebTransport, `moqt:` native QUIC, `wss:` QMux over
   * WebSocket (`ws:` on loopback); a `jwt` parameter is kept.
   */
  readonly url: URL;
  /** The broadcasts to announce and the tracks to serve. */
  readonly publisher: LivePublisher;
  /** Makes a fresh credential for each session (RELAY_SIGNING_KEY); replaces the URL's `jwt`. */
  readonly credential?: () => Promise<RelayCredential>;
  /** Only broadcasts under this path are announced (RELAY_PUBLISH); default all. */
  readonly publishPrefix?: string;
  /** RELAY_CA_FILE contents. */
  readonly caCerts?: readonly string[];
  /** Pin the relay's certificate by SHA-256 (development relays). */
  readonly serverCertificateHashes?: readonly Uint8Array[];
  /** RELAY_TLS_INSECURE. */
  readonly insecure?: boolean;
  /** RELAY_VERSION: speak this IETF draft instead of moq-lite (see `connectRelayMoq`). */
  readonly ietf?: IetfDraft;
  /** Delay before redialing after a session ends or a dial fails, ms (default 2000). */
  readonly redialMs?: number;
  /** Timers for the redial delay, credential expiry and dial deadline (default the global ones). */
  readonly timers?: RedialTimers;
  /** Wall clock in ms (default Date.now). */
  readonly now?: () => number;
  /**
   * QUIC idle timeout of the relay session, native QUIC and WebTransport, ms
   * (default 1000, `IDLE_TIMEOUT_MS`; keep-alives go every quarter of it): how soon a relay that
   * vanished without closing, or a link that went silent, is noticed.
   */
  readonly idleTimeoutMs?: number;
  /** Gives up a dial that has not connected within this time, ms (default 10000). */
  readonly dialTimeoutMs?: number;
  /** State changes and failures. */
  readonly log: Logger;
  /** Told of every state change (after it is logged). */
  readonly onState?: (state: RelayState) => void;
}

/** The spec's relay redial delay. */
export const RELAY_REDIAL_MS = 2000;

/**
 * The funnel's session with its relay, dialed as a client. Every broadcast
 * of the publisher is announced on it and the relay's subscriptions are
 * served from the publisher's tracks. When the session ends for any reason
 * — the relay closed it or went away, the dial failed, or its credential
 * expired (the client ends the session itself at expiry) — it waits
 * `redialMs` and dials again with a fresh credential, announcing anew.
 * Records keep being committed meanwhile; the relay's new subscriptions
 * start at each track's latest record.
 *
 * @example
 * ```ts
 * const relay = new RelayClient({ url: new URL("moqt://relay:4433/"), publisher, log });
 * relay.start();
 * await relay.stop();
 * ```
 */
export class RelayClient {
  readonly #options: RelayClientOptions;
  readonly #timers: RedialTimers;
  readonly #now: () => number;
  #state: RelayState = "stopped";
  #moq: MoqPeer | undefined;
  #timer: unknown;
  #stopped = false;
  #started = false;
  #sessions = 0;
  /** The session run whose end leads to a redial (a redirect's, once it connected). */
  #running: Promise<void> | undefined;
  readonly #open = new Set<MoqPeer>();
  readonly #dialing = new Set<AbortController>();

  /** Prepares the client; {@linkcode start} dials. */
  constructor(options: RelayClientOptions) {
    const scheme = options.url.protocol;
    if (!SESSION_SCHEMES.includes(scheme)) {
      throw new TypeError(`Cannot dial relay "${scheme}": use https:, moqt: or wss:`);
    }
    this.#options = options;
    this.#timers = options.timers ?? systemTimers;
    this.#now = options.now ?? Date.now;
  }

  /** The current state ("stopped" before {@linkcode start}). */
  get state(): RelayState {
    return this.#state;
  }

  /** Sessions established so far. */
  get sessions(): number {
    return this.#sessions;
  }

  /** The live session, if connected. */
  get session(): MoqPeer | undefined {
    return this.#moq;
  }

  /** Dials the relay (once; later calls do nothing). */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    this.#dial();
  }

  /** Ends the session and stops redialing. */
  async stop(): Promise<void> {
    if (this.#stopped) return await this.#running;
    this.#stopped = true;
    this.#clearTimer();
    for (const d of this.#dialing) d.abort();
    for (const moq of this.#open) moq.close(0, "funnel stopping");
    await this.#running;
    this.#setState("stopped");
  }

  #setState(state: RelayState, detail = ""): void {
    if (state === this.#state && state !== "reconnecting") return;
    this.#state = state;
    const url = describeRelayUrl(this.#options.url);
    const text = {
      connecting: `Relay ${url}: connecting`,
      connected: `Relay ${url}: connected, announcing ${this.#announced()} broadcast(s)`,
      reconnecting: `Relay ${url}: ${detail}; redialing in ${this.#redialMs / 1000} s`,
      stopped: `Relay ${url}: stopped`,
    }[state];
    if (state === "reconnecting") this.#options.log.warn(text);
    else this.#options.log.info(text);
    this.#options.onState?.(state);
  }

  #announced(): number {
    const prefix = this.#options.publishPrefix;
    const all = this.#options.publisher.broadcasts();
    if (prefix === undefined) return all.length;
    const p = normalizePath(prefix);
    return all.filter((path) => prefixCovers(p, path)).length;
  }

  get #redialMs(): number {
    return this.#options.redialMs ?? RELAY_REDIAL_MS;
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #dial(): void {
    if (this.#stopped) return;
    this.#setState("connecting");
    const run: Promise<void> = this.#session(this.#options.url).then(
      (why) => this.#ended(run, why),
      (error: unknown) => this.#ended(run, `cannot connect (${errorText(error)})`),
    );
    this.#running = run;
  }

  // A session run ended; only the current one leads to a redial (one left for a redirect does not).
  #ended(run: Promise<void>, why: string): void {
    if (run !== this.#running) return;
    this.#scheduleRedial(why);
  }

  /**
   * The relay sent GOAWAY. With a redirect URI: open a session there
   * (announcing everything), and only once it is up leave the draining
   * relay, so the relays carrying our tracks switch routes without a gap.
   * Without one, or when the redirect cannot be reached: leave, and redial
   * RELAY_URL after the usual delay.
   */
  #goaway(moq: MoqPeer, uri: string): void {
    const o = this.#options;
    o.log.warn(
      `Relay ${describeRelayUrl(moq.url ?? o.url)}: GOAWAY${
        uri ? ` to ${describeRelayUrl(uri)}` : ""
      }`,
    );
    // No redirect, or none we can follow: there is nowhere to go but RELAY_URL.
    const target = goawayRedirect(uri, moq.url ?? o.url);
    if (target === undefined) {
      moq.close(0, "goaway");
      return;
    }
    // The redirect gets our credential too (a signed one is made fresh per session).
    const jwt = o.url.searchParams.get("jwt");
    if (jwt !== null && !target.searchParams.has("jwt")) target.searchParams.set("jwt", jwt);
    const run: Promise<void> = this.#session(target, () => {
      this.#running = run;
      moq.close(0, "goaway: moved");
    }).then(
      (why) => this.#ended(run, why),
      (error: unknown) => {
        if (run === this.#running) this.#ended(run, `cannot connect (${errorText(error)})`);
        else {
          o.log.warn(`Relay ${describeRelayUrl(target)}: redirect failed (${errorText(error)})`);
          moq.close(0, "goaway");
        }
      },
    );
  }

  #scheduleRedial(why: string): void {
    this.#moq = undefined;
    if (this.#stopped) return;
    this.#setState("reconnecting", why);
    this.#timer = this.#timers.setTimeout(() => {
      this.#timer = undefined;
      this.#dial();
    }, this.#redialMs);
  }

  /** One session with `target`, from dial to end; resolves with why it ended. */
  async #session(target: URL, onConnected?: () => void): Promise<string> {
    const { url, expiresAt } = await this.#credentialed(target);
    const transport = await this.#dialTransport(url);
    if (this.#stopped) {
      transport.close(0, "funnel stopping");
      return "stopped";
    }
    const moq = await this.#connectMoq(transport);
    this.#moq = moq;
    this.#open.add(moq);
    this.#sessions++;
    let expired = false;
    // The relay refuses the credential after expiry: end the session ourselves and redial
    // with a fresh one rather than wait for the relay to notice.
    const expiry = expiresAt === undefined ? undefined : this.#timers.setTimeout(() => {
      expired = true;
      moq.close(0, "credential expired");
    }, Math.max(0, expiresAt - this.#now()));
    moq.goaway.then((uri) => {
      if (!this.#stopped && !moq.isClosed) this.#goaway(moq, uri);
    });
    onConnected?.();
    this.#setState("connected");
    const info = await moq.closed;
    this.#open.delete(moq);
    if (expiry !== undefined) this.#timers.clearTimeout(expiry);
    if (expired) return "session ended: its credential expired";
    return `session ended (${info.dropped ? "connection lost" : `code ${info.code}`}${
      info.reason ? `: ${info.reason}` : ""
    })`;
  }

  /** The URL to dial, with a fresh credential when the client signs its own, and its expiry. */
  async #credentialed(target: URL): Promise<{ url: URL; expiresAt: number | undefined }> {
    const url = new URL(target.href);
    if (!this.#options.credential) return { url, expiresAt: tokenExpiry(tokenFromUrl(url)) };
    const credential = await this.#options.credential();
    url.searchParams.set("jwt", credential.token);
    return { url, expiresAt: credential.expiresAt };
  }

  /** Dials the transport session, abandoned after the dial timeout or at stop(). */
  async #dialTransport(url: URL): Promise<Session> {
    const o = this.#options;
    const dialing = new AbortController();
    this.#dialing.add(dialing);
    const timeoutMs = o.dialTimeoutMs ?? 10_000;
    let timedOut = false;
    const timeout = this.#timers.setTimeout(() => {
      timedOut = true;
      dialing.abort();
    }, timeoutMs);
    const hashes = o.serverCertificateHashes;
    try {
      return await abortable(
        connectSession(url, {
          protocols: relayProtocols(o.ietf),
          signal: dialing.signal,
          timeoutMs,
          maxIdleTimeout: o.idleTimeoutMs ?? IDLE_TIMEOUT_MS,
          keepAliveInterval: keepAliveFor(o.idleTimeoutMs ?? IDLE_TIMEOUT_MS),
          ...(o.caCerts ? { caCerts: o.caCerts } : {}),
          ...(hashes ? { serverCertificateHashes: hashes } : {}),
          // Deno's QUIC and WebSocket have no per-connection switch: only the process-wide
          // --unsafely-ignore-certificate-errors skips verification (see below).
          ...(o.insecure ? { insecure: true } : {}),
        }),
        dialing.signal,
      );
    } catch (error) {
      if (timedOut) throw new Error(`no answer within ${timeoutMs / 1000} s`);
      if (o.insecure && !(error instanceof Error && error.message.includes("--unsafely"))) {
        throw new Error(
          `${errorText(error)} (RELAY_TLS_INSECURE takes ` +
            `effect only when the funnel runs with --unsafely-ignore-certificate-errors; ` +
            `RELAY_CA_FILE works without it)`,
        );
      }
      throw error;
    } finally {
      this.#timers.clearTimeout(timeout);
      this.#dialing.delete(dialing);
    }
  }

  /** The moq session over `transport`: it announces and serves the publisher's tracks. */
  #connectMoq(transport: Session): Promise<MoqPeer> {
    return connectRelayMoq(transport, this.#options);
  }
}

/**
 * Settles with `dial`, or rejects at once when `signal` aborts; a session
 * that connects after that is closed, so nothing is left open.
 */
function abortable(dial: Promise<Session>, signal: AbortSignal): Promise<Session> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new Error("dial abandoned"));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    dial.then((session) => {
      signal.removeEventListener("abort", onAbort);
      if (signal.aborted) session.close(0, "dial abandoned");
      else resolve(session);
    }, (error: unknown) => {
      signal.removeEventListener("abort", onAbort);
      reject(error);
    });
  });
}

/** The `exp` of an unverified JWT in ms, when it has one. */
function tokenExpiry(token: string | undefined): number | undefined {
  if (token === undefined) return undefined;
  const part = token.split(".")[1];
  if (!part) return undefined;
  try {
    const json = atob(part.replace(/-/g, "+").replace(/_/g, "/"));
    const claims: unknown = JSON.parse(json);
    if (typeof claims !== "object" || claims === null) return undefined;
    const exp = (claims as Record<string, unknown>).exp;
    return typeof exp === "number" && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    // Not a decodable JWT: its expiry is unknown.
    return undefined;
  }
}

/** A relay URL for logs and the startup summary, with its credential masked (text that is no URL is shown quoted). */
export function describeRelayUrl(url: URL | string): string {
  let shown: URL;
  try {
    shown = new URL(url);
  } catch {
    return JSON.stringify(String(url));
  }
  if (shown.searchParams.has("jwt")) shown.searchParams.set("jwt", "***");
  return shown.href;
}
