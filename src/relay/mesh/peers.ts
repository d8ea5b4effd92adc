import { errorText, redactUrl } from "../../error_text/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import { formatAddr, isIpLiteral } from "../../transport/mod.ts";
import { DialBackoff } from "./dial_backoff.ts";
import type { PeerCredential } from "./peer_credential.ts";
import { dialPeer } from "./peer_dial.ts";
import { PeerLink, type PeerSession } from "./peer_link.ts";
import { type Resolver, systemResolver } from "./peer_resolver.ts";
import type { PeerTransport } from "./peer_transport.ts";
import type { RelayMetrics } from "../metrics/mod.ts";
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
  /** The address the entry's name resolved to, which this link dials. */
  readonly address: string;
}

/** `host:port` of an address (IPv6 in brackets): a link's key and `peer` label. */
function addressKey(host: string, port: number): string {
  return formatAddr({ transport: "udp", hostname: host, port });
}

/**
 * The peers this relay dials: resolves every `PEERS` entry (retrying names
 * that do not resolve), keeps one {@linkcode PeerLink} per distinct address,
 * and looks each name up again before a redial, so a peer that moved is
 * found at its new address. Follows GOAWAY from peers it dialed, to a host
 * and port named in PEERS only, which it dials already: that link carries
 * the routes, so a redirect never adds a link of its own.
 */
export class Peers {
  readonly #opts: PeersOptions;
  readonly #links = new Map<string, EntryLink>();
  readonly #resolving = new Set<unknown>();
  #stopped = false;

  /** Prepares the peers; {@linkcode start} resolves and dials. */
  constructor(options: PeersOptions) {
    this.#opts = options;
    options.metrics.registry.onCollect(() => {
      let n = 0;
      for (const l of this.#links.values()) if (l.link.connected) n++;
      options.metrics.peersConnected.set({}, n);
    });
  }

  /** Live PEERS links by address (for tests and diagnostics). */
  links(): PeerLink[] {
    return [...this.#links.values()].map((l) => l.link);
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
      this.#links.set(key, { link, entry, address });
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
    });
    return link;
  }

  #link(label: string, dial: () => Promise<PeerSession>): PeerLink {
    return new PeerLink({
      label,
      dial,
      metrics: this.#opts.metrics,
      ...(this.#opts.timers ? { timers: this.#opts.timers } : {}),
      ...(this.#opts.now ? { now: this.#opts.now } : {}),
      log: this.#opts.log,
    });
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
   * A peer sent GOAWAY naming a redirect. Only a session this relay dialed
   * is listened to (anyone may dial in and call itself a peer), and only a
   * `moqt://` or `wss://` redirect to a host named in PEERS (by its name or
   * an address that name resolved to) is dialed, since each dial carries a
   * fresh peer credential. Such a relay is one this relay dials already
   * (every address a PEERS name resolves to has its link), and that link
   * carries the routes; a PEERS entry whose name has not resolved yet is
   * placed now with the addresses the redirect's lookup found. The session
   * layer leaves the draining peer once no route runs through it (see
   * docs/relay.md).
   */
  goaway(g: PeerGoaway): void {
    if (this.#stopped || g.uri === "") return;
    const shown = redactUrl(g.uri);
    if (!g.dialed) {
      this.#opts.log(
        `relay: ignoring GOAWAY redirect ${shown} from peer ${g.peer}: it dialed in, and only ` +
          `redirects from peers this relay dialed are followed`,
      );
      return;
    }
    let target: URL;
    try {
      target = new URL(g.uri);
    } catch {
      this.#opts.log(`relay: ignoring GOAWAY redirect "${shown}": not a URL`);
      return;
    }
    if (target.protocol !== "moqt:" && target.protocol !== "wss:") {
      this.#opts.log(`relay: ignoring GOAWAY redirect ${shown}: the scheme must be moqt or wss`);
      return;
    }
    void this.#redirect(target).catch((e) => {
      this.#opts.log(`relay: GOAWAY redirect ${shown} not followed: ${errorText(e)}`);
    });
  }

  /** True when `names` (a host and the addresses it resolved to) hold a host named in PEERS. */
  #configuredHost(names: readonly string[]): boolean {
    const hosts = new Set<string>();
    for (const l of this.#links.values()) hosts.add(l.address.toLowerCase());
    for (const e of this.#opts.entries) hosts.add(e.host.toLowerCase());
    return names.some((n) => hosts.has(n.toLowerCase()));
  }

  /** True when `host` (a name or an address a PEERS name resolved to) with `port` is a PEERS entry. */
  #configuredPeer(host: string, port: number): boolean {
    const h = host.toLowerCase();
    for (const l of this.#links.values()) {
      if (l.entry.port === port && l.address.toLowerCase() === h) return true;
    }
    return this.#opts.entries.some((e) => e.port === port && e.host.toLowerCase() === h);
  }

  async #redirect(target: URL): Promise<void> {
    const host = target.hostname.replace(/^\[|\]$/g, "");
    const port = Number(target.port || 443);
    let addresses = [host];
    let resolved = isIpLiteral(host);
    if (!resolved) {
      try {
        addresses = await this.#lookup(host);
        resolved = true;
      } catch {
        // Left to the name's PEERS entry, which looks it up again with its backoff.
      }
    }
    if (this.#stopped) return;
    // A name PEERS holds is trusted as it resolves (as PEERS dialing does); any other name
    // only for its addresses PEERS holds, so one matching address cannot take the peer
    // credential to another.
    if (!this.#configuredHost([host])) {
      addresses = addresses.filter((address) => this.#configuredHost([address]));
    }
    if (addresses.length === 0) throw new Error(`${target.host} is not a host named in PEERS`);
    // The port too: another port of a PEERS host is another service, which the peer
    // credential must not reach.
    if (!this.#configuredPeer(host, port)) {
      addresses = addresses.filter((address) => this.#configuredPeer(address, port));
    }
    if (addresses.length === 0) {
      throw new Error(`${target.host}: port ${port} is not one PEERS names for that host`);
    }
    const keys = addresses.map((a) => addressKey(a, port));
    const known = keys.find((k) => this.#links.has(k)) ??
      [...this.#links].find(([, l]) => l.entry.host === host && l.entry.port === port)?.[0];
    if (known !== undefined) {
      this.#opts.log(`relay: GOAWAY redirect ${target.host} is peer ${known}; using that link`);
      return;
    }
    // Every address a PEERS entry resolved to has its link, so only an entry that has not
    // resolved yet (its lookup failed, and waits for its retry) gets here: place it now.
    const h = host.toLowerCase();
    const entry = this.#opts.entries.find((e) =>
      e.port === port && (e.host.toLowerCase() === h || addresses.includes(e.host))
    );
    if (!entry) return; // unreachable: the filters above keep PEERS hosts and ports only
    if (isIpLiteral(entry.host)) addresses = [entry.host];
    else if (!resolved || entry.host.toLowerCase() !== h) {
      this.#opts.log(
        `relay: GOAWAY redirect ${target.host} is PEERS entry ${entry.host}, which does not ` +
          `resolve yet; it is dialed once it does`,
      );
      return;
    }
    this.#opts.log(
      `relay: GOAWAY redirect ${target.host} is PEERS entry ${entry.host}; dialing it`,
    );
    this.#place(entry, addresses);
  }

  /** Stops dialing (a draining relay): live sessions run until they end. */
  finish(): void {
    this.#stopped = true;
    for (const l of this.links()) l.finish();
  }

  /** Stops every link and pending resolution. */
  stop(): void {
    this.#stopped = true;
    const timers = this.#opts.timers ?? systemTimers;
    for (const t of this.#resolving) timers.clearTimeout(t);
    this.#resolving.clear();
    for (const l of this.links()) l.stop();
  }
}
