import { lookup } from "node:dns/promises";
import { errorText } from "../errors/mod.ts";
import { systemTimers, type Timers } from "../timers/mod.ts";
import { VERSIONS } from "../moq/mod.ts";
import { connectQMux, connectQuicSession, type Session } from "../transport/mod.ts";
import { PEER_PARAMETER } from "./admission.ts";
import { DialBackoff } from "./dial_backoff.ts";
import { PeerLink, type PeerSession } from "./peer_link.ts";
import type { RelayMetrics } from "./relay_metrics.ts";
import type { PeerGoaway, RelaySessions } from "./sessions.ts";

/** One `PEERS` entry: a name (or address), a port, and how to dial it. */
export interface PeerEntry {
  /** Host name or IP address (IPv6 without brackets). */
  readonly host: string;
  /** UDP port (TCP for `wss`). */
  readonly port: number;
  /** `moqt` (native QUIC, the default) or `wss` (QMux over WebSocket). */
  readonly scheme?: "moqt" | "wss";
}

/** A credential for one dialed session. */
export interface PeerCredential {
  /** The token, sent as the URL's `jwt`. */
  readonly token: string;
  /** When it expires, ms since the epoch. */
  readonly expiresAt: number;
}

/**
 * Opens the transport session to a peer: the one place a peer URL becomes a
 * {@linkcode Session}. `url` is `moqt://host:port/?peer=…&jwt=…` (or the
 * scheme of a redirect), `serverName` the name its certificate must carry.
 */
export type PeerTransport = (
  url: URL,
  serverName: string,
  signal: AbortSignal,
) => Promise<Session>;

/** How long a peer that vanished without closing takes to notice, ms (QUIC idle timeout). */
export const PEER_IDLE_TIMEOUT_MS = 5000;

/**
 * Peers over native QUIC or WebSocket: `moqt:` and `https:` URLs are both
 * dialed on their port over QUIC with moq-lite's ALPN (a sluice relay
 * serves both on one port); `wss:` URLs over QMux on WebSocket, for peers
 * behind networks that drop UDP.
 */
export function peerTransport(caCerts: readonly string[] | undefined): PeerTransport {
  return async (url, serverName, signal) => {
    if (url.protocol === "wss:") {
      return await connectQMux(url, {
        protocols: VERSIONS,
        serverName,
        signal,
        ...(caCerts ? { caCerts } : {}),
      });
    }
    if (url.protocol !== "moqt:" && url.protocol !== "https:") {
      throw new TypeError(`Cannot dial a peer at "${url.protocol}//": use moqt:, https: or wss:`);
    }
    const quicUrl = new URL(url.href.replace(/^https:/, "moqt:"));
    if (quicUrl.port === "" && url.protocol === "https:") quicUrl.port = "443";
    return await connectQuicSession(quicUrl, {
      alpn: VERSIONS,
      serverName,
      signal,
      maxIdleTimeout: PEER_IDLE_TIMEOUT_MS,
      keepAliveInterval: 1000,
      ...(caCerts ? { caCerts } : {}),
    });
  };
}

/** Resolves a host name to its addresses (IP literals resolve to themselves). */
export type Resolver = (host: string) => Promise<string[]>;

/** The system resolver (hosts file and DNS, as the OS resolves); IP literals resolve to themselves. */
export async function systemResolver(host: string): Promise<string[]> {
  if (/^[\d.]+$/.test(host) || host.includes(":")) return [host];
  const found = await lookup(host, { all: true });
  return [...new Set(found.map((a) => a.address))];
}

/** Options of {@linkcode Peers}. */
export interface PeersOptions {
  /** The `PEERS` entries. */
  readonly entries: readonly PeerEntry[];
  /** RELAY_NAME: sent as the `peer` URL parameter. */
  readonly name: string;
  /** Signs a fresh peer credential per dialed session (RELAY_PEER_KEY); none with auth off. */
  readonly credential?: () => Promise<PeerCredential>;
  /** The session layer that runs dialed sessions. */
  readonly sessions: RelaySessions;
  /** Opens transport sessions to peers. */
  readonly transport: PeerTransport;
  /** Name resolution (default the system's). */
  readonly resolve?: Resolver;
  /** Metrics. */
  readonly metrics: RelayMetrics;
  /** Timers (default the global ones). */
  readonly timers?: Timers;
  /** Wall clock in ms. */
  readonly now?: () => number;
  /** Logs a line. */
  readonly log: (line: string) => void;
}

/** Formats an address and port as `host:port` (IPv6 in brackets). */
export function hostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The peers this relay dials: resolves every `PEERS` entry (retrying names
 * that do not resolve), keeps one {@linkcode PeerLink} per distinct address,
 * and follows GOAWAY from peers, dialing a redirect until the original
 * peer is back.
 */
export class Peers {
  readonly #opts: PeersOptions;
  readonly #links = new Map<string, PeerLink>();
  /** Redirect links by the peer they stand in for (a link label, or `in:<name>`). */
  readonly #redirects = new Map<string, PeerLink>();
  readonly #resolving = new Set<unknown>();
  #stopped = false;

  /** Prepares the peers; {@linkcode start} resolves and dials. */
  constructor(options: PeersOptions) {
    this.#opts = options;
    options.metrics.registry.onCollect(() => {
      let n = 0;
      for (const l of [...this.#links.values(), ...this.#redirects.values()]) {
        if (l.connected) n++;
      }
      options.metrics.peersConnected.set({}, n);
    });
  }

  /** Live links by address (for tests and diagnostics). */
  links(): PeerLink[] {
    return [...this.#links.values()];
  }

  /** Resolves every entry and starts dialing. */
  start(): void {
    for (const entry of this.#opts.entries) void this.#resolve(entry, new DialBackoff());
  }

  async #resolve(entry: PeerEntry, backoff: DialBackoff): Promise<void> {
    if (this.#stopped) return;
    const label = hostPort(entry.host, entry.port);
    let addresses: string[];
    try {
      addresses = await (this.#opts.resolve ?? systemResolver)(entry.host);
      if (addresses.length === 0) throw new Error("no address");
    } catch (e) {
      const m = this.#opts.metrics;
      m.peerDialAttemptsTotal.inc({ peer: label, result: "error" });
      m.dialRetriesTotal.inc({ peer: label });
      const wait = backoff.failed();
      this.#opts.log(
        `relay: peer ${label} does not resolve (${errorText(e)}); retrying in ${
          (wait / 1000).toFixed(1)
        } s`,
      );
      const timers = this.#opts.timers ?? systemTimers;
      const t = timers.setTimeout(() => {
        this.#resolving.delete(t);
        void this.#resolve(entry, backoff);
      }, wait);
      this.#resolving.add(t);
      return;
    }
    if (this.#stopped) return;
    for (const address of addresses) {
      const key = hostPort(address, entry.port);
      if (this.#links.has(key)) continue; // the same address from two entries
      const url = new URL(`${entry.scheme ?? "moqt"}://${key}/`);
      // The original peer is back: a redirect standing in for it is no longer needed.
      const link = this.#link(key, url, entry.host, () => this.#dropRedirect(key));
      this.#links.set(key, link);
      link.start();
    }
  }

  #link(label: string, url: URL, serverName: string, onConnected: () => void): PeerLink {
    return new PeerLink({
      label,
      dial: () => this.#dial(url, serverName, label),
      metrics: this.#opts.metrics,
      ...(this.#opts.timers ? { timers: this.#opts.timers } : {}),
      ...(this.#opts.now ? { now: this.#opts.now } : {}),
      onConnected,
      log: this.#opts.log,
    });
  }

  #dropRedirect(key: string): void {
    this.#redirects.get(key)?.stop();
    this.#redirects.delete(key);
  }

  async #dial(target: URL, serverName: string, label: string): Promise<PeerSession> {
    const o = this.#opts;
    const url = new URL(target.href);
    url.searchParams.set(PEER_PARAMETER, o.name);
    let expiresAt: number | undefined;
    if (o.credential) {
      const credential = await o.credential();
      url.searchParams.set("jwt", credential.token);
      expiresAt = credential.expiresAt;
    }
    const session = await o.transport(url, serverName, AbortSignal.timeout(10_000));
    const dialed = await o.sessions.dialed(session, label);
    return { ...dialed, ...(expiresAt === undefined ? {} : { expiresAt }) };
  }

  /**
   * A peer sent GOAWAY naming a redirect: dial it as a stand-in until the
   * original peer is back (the session layer leaves the draining peer once
   * no route runs through it; see docs/relay.md).
   */
  goaway(g: PeerGoaway): void {
    if (this.#stopped || g.uri === "") return;
    let target: URL;
    try {
      target = new URL(g.uri);
    } catch {
      this.#opts.log(`relay: ignoring GOAWAY redirect "${g.uri}": not a URL`);
      return;
    }
    const original = g.dialed
      ? [...this.#links.values()].find((l) => l.session?.moq === g.moq)
      : undefined;
    const key = original?.label ?? `in:${g.peer}`;
    this.#dropRedirect(key);
    const host = target.hostname.replace(/^\[|\]$/g, "");
    const redirect = this.#link(
      hostPort(host, Number(target.port || 443)),
      new URL(`${target.protocol}//${target.host}/`),
      host,
      () => {},
    );
    this.#redirects.set(key, redirect);
    redirect.start();
  }

  /** A peer dialed in and was admitted: a redirect standing in for it is no longer needed. */
  peerArrived(name: string): void {
    this.#dropRedirect(`in:${name}`);
  }

  /** Stops dialing (a draining relay): live sessions run until they end. */
  finish(): void {
    this.#stopped = true;
    for (const l of [...this.#links.values(), ...this.#redirects.values()]) l.finish();
  }

  /** Stops every link and pending resolution. */
  stop(): void {
    this.#stopped = true;
    const timers = this.#opts.timers ?? systemTimers;
    for (const t of this.#resolving) timers.clearTimeout(t);
    this.#resolving.clear();
    for (const l of [...this.#links.values(), ...this.#redirects.values()]) l.stop();
  }
}
