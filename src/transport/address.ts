/** Formats a Deno address as `host:port` (IPv6 in brackets). */
export function formatAddr(addr: Deno.NetAddr): string {
  return addr.hostname.includes(":")
    ? `[${addr.hostname}]:${addr.port}`
    : `${addr.hostname}:${addr.port}`;
}

/** True when `host` is an IPv4 or IPv6 address (IPv6 without brackets), not a name to resolve. */
export function isIpLiteral(host: string): boolean {
  return host.includes(":") || /^\d{1,3}(\.\d{1,3}){3}$/.test(host);
}

/**
 * True when `host` is a loopback address: `127.0.0.0/8`, `::1`, or either
 * as an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, how a dual-stack
 * socket reports IPv4 peers). Brackets are allowed; names are not resolved.
 */
export function isLoopbackAddress(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "::1" || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
