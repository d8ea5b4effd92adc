/**
 * The relay's mesh settings: the peers it dials, how it proves itself to
 * them, how it checks them, its name, and where GOAWAY sends sessions when
 * it stops. Combinations that cannot work are refused here, naming the
 * variables, like every other configuration error.
 *
 * @module
 */
import { GOAWAY_SCHEMES } from "./schemes.ts";
import type { EnvReader, Setting } from "./env.ts";

/** One `PEERS` entry. */
export interface PeerAddress {
  /** Host name or IP address (IPv6 without brackets). */
  readonly host: string;
  /** Port, 1..65535 (UDP for native QUIC, TCP for `wss`). */
  readonly port: number;
  /** `wss` for `wss://host:port` entries (QMux over WebSocket); native QUIC otherwise. */
  readonly scheme?: "wss";
}

/** The mesh part of the relay's configuration. */
export interface MeshSettings {
  /** PEERS: relays to dial, duplicates dropped. */
  readonly peers: Setting<readonly PeerAddress[]>;
  /** RELAY_PEER_KEY: private key file that signs this relay's peer credentials. */
  readonly peerKey: Setting<string | undefined>;
  /** PEER_CA_FILE: PEM root that verifies peers' certificates; undefined: the system roots. */
  readonly peerCaFile: Setting<string | undefined>;
  /** RELAY_NAME: this relay's name in logs and peer credentials. */
  readonly name: Setting<string>;
  /** GOAWAY_REDIRECT_URI: where GOAWAY sends sessions at shutdown; undefined names none. */
  readonly goawayRedirectUri: Setting<string | undefined>;
}

const NAME = /^[A-Za-z0-9._:-]{1,64}$/;

/** `relay-<hostname>`, or `relay` where the host name may not be read. */
export function defaultRelayName(): string {
  try {
    const host = Deno.hostname().split(".")[0] ?? "";
    return NAME.test(`relay-${host}`) ? `relay-${host}` : "relay";
  } catch {
    // Without --allow-sys (sluice doctor) the host name is not readable.
    return "relay";
  }
}

/**
 * Parses one entry: `host:port` (`[v6]:port` for IPv6) dials native QUIC,
 * `wss://host:port` QMux over WebSocket (for peers behind networks that drop UDP).
 */
export function parsePeerAddress(text: string): PeerAddress {
  const wss = /^wss:\/\//i.test(text);
  const rest = wss ? text.slice(6).replace(/\/$/, "") : text;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(rest);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 1 && port <= 65535)) {
    throw new TypeError(
      `entry "${text}" is not host:port, [ipv6]:port or wss://host:port with a port 1..65535`,
    );
  }
  return { host: m[1] ?? m[2]!, port, ...(wss ? { scheme: "wss" as const } : {}) };
}

/** Parses the comma-separated `PEERS` list; empty entries are skipped, duplicates dropped. */
export function parsePeers(text: string): PeerAddress[] {
  const seen = new Set<string>();
  const out: PeerAddress[] = [];
  for (const entry of text.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const p = parsePeerAddress(entry);
    const key = `${p.scheme ?? ""}${p.host.toLowerCase()}:${p.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(p);
  }
  return out;
}

function parseName(text: string): string {
  if (!NAME.test(text)) {
    throw new TypeError(`must be 1 to 64 letters, digits, ".", "_", ":" or "-", got "${text}"`);
  }
  return text;
}

function parseRedirect(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(`must be a moqt://, https:// or wss:// URL, got "${text}"`);
  }
  if (!GOAWAY_SCHEMES.includes(url.protocol) || url.hostname === "") {
    throw new TypeError(`must be a moqt://, https:// or wss:// URL with a host, got "${text}"`);
  }
  return text;
}

/**
 * Reads the mesh settings. `authOn` is whether SLUICE_AUTH_KEYS is set:
 * then peers verify credentials too, so dialing PEERS needs RELAY_PEER_KEY.
 */
export function readMeshSettings(r: EnvReader, authOn: boolean): MeshSettings {
  const show = (v: string | undefined): string => v ?? "(unset)";
  const text = (s: string): string => s;
  const peers = r.setting<readonly PeerAddress[]>(
    "PEERS",
    [],
    parsePeers,
    (v) =>
      v.length === 0
        ? "(none)"
        : v.map((p) =>
          (p.scheme ? `${p.scheme}://` : "") + (p.host.includes(":") ? `[${p.host}]` : p.host) +
          `:${p.port}`
        ).join(","),
  );
  const peerKey = r.setting<string | undefined>("RELAY_PEER_KEY", undefined, text, show);
  if (peers.value.length > 0 && authOn && peerKey.value === undefined) {
    r.problem(
      "RELAY_PEER_KEY",
      "must be set when PEERS is set and SLUICE_AUTH_KEYS is on: this relay's peers check " +
        "credentials too, and RELAY_PEER_KEY signs the one it presents",
    );
  }
  return {
    peers,
    peerKey,
    peerCaFile: r.setting<string | undefined>(
      "PEER_CA_FILE",
      undefined,
      text,
      (v) => v ?? "(unset: system roots)",
    ),
    name: r.setting("RELAY_NAME", defaultRelayName(), parseName),
    goawayRedirectUri: r.setting<string | undefined>(
      "GOAWAY_REDIRECT_URI",
      undefined,
      parseRedirect,
      show,
    ),
  };
}
