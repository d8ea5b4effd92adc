import { errorText } from "../../error_text/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import { formatAddr, isIpLiteral } from "../../transport/mod.ts";
import { DialBackoff } from "./dial_backoff.ts";
import type { PeerCredential } from "./peer_credential.ts";
import { dialPeer } from "./peer_dial.ts";
import { PeerLink, type PeerSession } from "./peer_link.ts";
import { type Resolver, systemResolver } from "./peer_resolver.ts";
import type { PeerTransport } from "./peer_transport.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
import type { RouteTable } from "../routing/mod.ts";
import type { PeerGoaway, RelaySessions } from "../sessions/mod.ts";

/** One `PEERS` entry: a name (or address), a port, and how to dial it. */
export interface PeerEntry {
  /** Host name or IP address (IPv6 without brackets). */
  readonly host: string;
  /** UDP port (TCP for `wss`). */
  readonly port: number;
  /** `moqt` (native QUIC, the default) or `wss` (QMux over WebSocket). */
  readonly scheme?: "moqt" | "wss";
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
  /** The relay's routes: a GOAWAY redirect is dropped once no selected route runs through it. */
  readonly routes?: RouteTable;
  /** Longest wait for one dial, transport and moq handshake together, ms (default 10000). */
  readonly dialTimeoutMs?: number;
  /** Metrics. */
  readonly metrics: RelayMetrics;
  /** Timers (default the global ones). */
  readonly timers?: Timers;
  /** Wall clock in ms. */
  readonly now?: () => number;
  /** Logs a line. */
  readonly log: (line: string) => void;
}

/** A PEERS link and the entry whose name resolved to its address. */
interface EntryLink {
  readonly link: PeerLink;
  readonly entry: PeerEntry;
}

/** A GOAWAY redirect's link and the peers (link labels, or `in:<name>`) it stands in for. */
interface RedirectLink {
  readonly link: PeerLink;
  readonly standingIn: Set<string>;
  /** True once a selected route ran through it. */
  used: boolean;
  unwatch: () => void;
}

/** `host:port` of an address (IPv6 in brackets): a link's key and `peer` label. */
function addressKey(host: string, port: number): string {
  return formatAddr({ transport: "udp", hostname: host, port });
}

/**
 * The peers this relay dials: resolves every `PEERS` entry (retrying names
 * that do not resolve), keeps one {@linkcode PeerLink} per distinct address,
 * and looks each name up again before a redial, so a peer that moved is
 * found at its new address. Follows GOAWAY from peers: a redirect to a
 * relay already dialed uses that link; any other is dialed as a stand-in
 * until the original peer is back or no selected route runs through it.
 */
export class Peers {
  readonly #opts: PeersOptions;
  readonly #links = new Map<string, EntryLink>();
  /** Redirect links by the address they dial. */
  readonly #redirects = new Map<string, RedirectLink>();
  /** The redirect address standing in for each peer (a link label, or `in:<name>`). */
  readonly #standIns = new Map<string, string>();
  readonly #resolving = new Set<unknown>();
  #stopped = false;

  /** Prepares the peers; {@linkcode start} resolves and dials. */
  constructor(options: PeersOptions) {
    this.#opts = options;
    options.metrics.registry.onCollect(() => {
      let n = 0;
      for (const l of this.#all()) if (l.connected) n++;
      options.metrics.peersConnected.set({}, n);
    });
  }

  /** Live PEERS links by address (for tests and diagnostics). */
  links(): PeerLink[] {
    return [...this.#links.values()].map((l) => l.link);
  }

  /** Links dialed because of a GOAWAY redirect (for tests and diagnostics). */
  redirects(): PeerLink[] {
    return [...this.#redirects.values()].map((r) => r.link);
  }

  #all(): PeerLink[] {
    return [...this.links(), ...this.redirects()];
  }

  /** Resolves every entry and starts dialing. */
  start(): void {
    for (const entry of this.#opts.entries) void this.#resolve(entry, new DialBackoff());
  }

  async #lookup(host: string): Promise<string[]> {
    const addresses = await (this.#opts.resolve ?? systemResolver)(host);
    if (addresses.length === 0) throw new Error("no address");
    return addresses;
  }

  async #resolve(entry: PeerEntry, backoff: DialBackoff): Promise<void> {
    if (this.#stopped) return;
    const label = addressKey(entry.host, entry.port);
    let addresses: string[];
    try {
      addresses = await this.#lookup(entry.host);
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
    this.#place(entry, addresses);
  }

  /**
   * Keeps `entry`'s links in step with what its name resolves to now: new
   * addresses are dialed; a link to an address the name no longer has stops
   * unless its session is up (that one looks again when the session ends).
   */
  #place(entry: PeerEntry, addresses: readonly string[]): void {
    if (this.#stopped) return;
    const keys = new Set(addresses.map((a) => addressKey(a, entry.port)));
    for (const [key, l] of this.#links) {
      if (l.entry !== entry || keys.has(key) || l.link.connected) continue;
      l.link.stop();
      this.#links.delete(key);
      this.#opts.log(`relay: peer ${entry.host} no longer resolves to ${key}; not dialing it`);
    }
    for (const address of addresses) {
      const key = addressKey(address, entry.port);
      if (this.#links.has(key)) continue; // the same address from two entries
      const link = this.#entryLink(entry, address, key);
      this.#links.set(key, { link, entry });
      link.start();
    }
  }

  #entryLink(entry: PeerEntry, address: string, key: string): PeerLink {
    const url = new URL(`${entry.scheme ?? "moqt"}://${key}/`);
    let first = true;
    const link: PeerLink = this.#link(key, async () => {
      // Every redial after a failure or a lost session looks the name up again (the first dial
      // follows the start's lookup; a renewal keeps the address its session is up on).
      if (!first && !link.connected && !isIpLiteral(entry.host)) {
        this.#place(entry, await this.#lookup(entry.host));
        if (link.stopped) throw new Error(`${entry.host} no longer resolves to ${address}`);
      }
      first = false;
      return await this.#dial(url, entry.host, key);
    }, () => this.#dropRedirect(key)); // the original peer is back: its stand-in is not needed
    return link;
  }

  #link(label: string, dial: () => Promise<PeerSession>, onConnected: () => void): PeerLink {
    return new PeerLink({
      label,
      dial,
      metrics: this.#opts.metrics,
      ...(this.#opts.timers ? { timers: this.#opts.timers } : {}),
      ...(this.#opts.now ? { now: this.#opts.now } : {}),
      onConnected,
      log: this.#opts.log,
    });
  }

  /** The peer `key` stood in for is back, or the stand-in is done: release its redirect. */
  #dropRedirect(key: string): void {
    const at = this.#standIns.get(key);
    if (at === undefined) return;
    this.#standIns.delete(key);
    const r = this.#redirects.get(at);
    if (!r) return;
    r.standingIn.delete(key);
    if (r.standingIn.size > 0) return;
    this.#redirects.delete(at);
    r.unwatch();
    r.link.stop();
  }

  #dial(target: URL, serverName: string, label: string): Promise<PeerSession> {
    const o = this.#opts;
    return dialPeer(target, serverName, label, {
      name: o.name,
      sessions: o.sessions,
      transport: o.transport,
      ...(o.credential ? { credential: o.credential } : {}),
      ...(o.dialTimeoutMs !== undefined ? { dialTimeoutMs: o.dialTimeoutMs } : {}),
      ...(o.timers ? { timers: o.timers } : {}),
    });
  }

  /**
   * A peer sent GOAWAY naming a redirect. A relay this relay dials already
   * (a PEERS address) carries the routes as it is; any other is dialed as a
   * stand-in (one link per address, whichever peers it stands in for) until
   * the original peer is back or no selected route runs through it any
   * more. The session layer leaves the draining peer once no route runs
   * through it (see docs/relay.md).
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
      ? [...this.#links.values()].find((l) => l.link.session?.moq === g.moq)
      : undefined;
    const key = original?.link.label ?? `in:${g.peer}`;
    this.#dropRedirect(key);
    void this.#redirect(key, target).catch((e) => {
      this.#opts.log(`relay: GOAWAY redirect ${g.uri} not followed: ${errorText(e)}`);
    });
  }

  async #redirect(key: string, target: URL): Promise<void> {
    const host = target.hostname.replace(/^\[|\]$/g, "");
    const port = Number(target.port || 443);
    let addresses = [host];
    if (!isIpLiteral(host)) {
      try {
        addresses = await this.#lookup(host);
      } catch {
        // Dial the name as given: the transport resolves it again, or reports why not.
      }
    }
    if (this.#stopped) return;
    const keys = addresses.map((a) => addressKey(a, port));
    const known = keys.find((k) => this.#links.has(k)) ??
      [...this.#links].find(([, l]) => l.entry.host === host && l.entry.port === port)?.[0];
    if (known !== undefined) {
      this.#opts.log(`relay: GOAWAY redirect ${target.host} is peer ${known}; using that link`);
      return;
    }
    const at = keys[0]!;
    let r = this.#redirects.get(at);
    if (!r) {
      const url = new URL(`${target.protocol}//${at}/`);
      const link = this.#link(at, () => this.#dial(url, host, at), () => {});
      const held: RedirectLink = { link, standingIn: new Set(), used: false, unwatch: () => {} };
      const routes = this.#opts.routes;
      if (routes) held.unwatch = routes.onChange(() => this.#checkUsed(at, held, routes));
      r = held;
      this.#redirects.set(at, r);
      link.start();
    }
    r.standingIn.add(key);
    this.#standIns.set(key, at);
  }

  // A stand-in that carried routes and carries none any more has done its job.
  #checkUsed(at: string, r: RedirectLink, routes: RouteTable): void {
    const remote = r.link.session?.moq.remote;
    if (remote === undefined || this.#redirects.get(at) !== r) return;
    if (routes.routes().some((route) => route.source.remote === remote)) {
      r.used = true;
      return;
    }
    if (!r.used) return;
    this.#opts.log(`relay: GOAWAY redirect ${at}: no route runs through it any more; leaving it`);
    for (const key of [...r.standingIn]) this.#dropRedirect(key);
  }

  /** A peer dialed in and was admitted: a redirect standing in for it is no longer needed. */
  peerArrived(name: string): void {
    this.#dropRedirect(`in:${name}`);
  }

  /** Stops dialing (a draining relay): live sessions run until they end. */
  finish(): void {
    this.#stopped = true;
    for (const l of this.#all()) l.finish();
  }

  /** Stops every link and pending resolution. */
  stop(): void {
    this.#stopped = true;
    const timers = this.#opts.timers ?? systemTimers;
    for (const t of this.#resolving) timers.clearTimeout(t);
    this.#resolving.clear();
    for (const r of this.#redirects.values()) r.unwatch();
    for (const l of this.#all()) l.stop();
  }
}
