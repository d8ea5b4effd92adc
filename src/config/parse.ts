/**
 * Parsers of setting values shared by the funnel's and the relay's
 * configuration. Each throws `TypeError` with a message that quotes the bad
 * value and leaves naming the variable to the reader.
 *
 * @module
 */

/** A host and port to listen on. */
export interface ListenAddress {
  /**
   * Interface to bind; "" (from `:port`) is every interface: the servers bind
   * `::`, which takes IPv4 too, or `0.0.0.0` where the host has no IPv6.
   */
  readonly hostname: string;
  /** Port (0 picks a free one). */
  readonly port: number;
}

/**
 * Parses a listen address such as `:8090`, `127.0.0.1:8090` or
 * `[::1]:8090`; an empty host means every interface.
 */
export function parseListenAddress(text: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]]*)):(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new TypeError(
      `must be host:port, :port or [ipv6]:port with a port 0..65535, got "${text}"`,
    );
  }
  return { hostname: m[1] ?? m[2] ?? "", port };
}

/**
 * A listen address as `host:port` (`:port` for every interface), an IPv6
 * host in brackets (as in a URL).
 */
export function formatListenAddress(address: ListenAddress): string {
  const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname;
  return `${host}:${address.port}`;
}

/** A listen address setting for people: `host:port`, saying what `:port` binds. */
export function describeListenAddress(address: ListenAddress): string {
  return address.hostname === ""
    ? `${formatListenAddress(address)} (every interface: [::] for IPv6 and IPv4, else 0.0.0.0; ` +
      `the startup log says which)`
    : formatListenAddress(address);
}

/** Parses a boolean: 1/0, true/false, yes/no, on/off. */
export function parseBoolean(text: string): boolean {
  const v = text.toLowerCase();
  if (v === "1" || v === "true" || v === "yes" || v === "on") return true;
  if (v === "0" || v === "false" || v === "no" || v === "off") return false;
  throw new TypeError(`must be 1 or 0 (true or false), got "${text}"`);
}

/**
 * A parser of whole numbers from `min` to `max`; `unit` completes "an
 * integer" in the message (" number of groups").
 */
export function parseIntIn(min: number, max: number, unit = ""): (text: string) => number {
  return (text) => {
    if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new TypeError(`must be an integer${unit} between ${min} and ${max}, got "${text}"`);
    }
    return Number(text);
  };
}
