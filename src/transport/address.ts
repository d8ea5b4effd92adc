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
