/** Formats a Deno address as `host:port` (IPv6 in brackets). */
export function formatAddr(addr: Deno.NetAddr): string {
  return addr.hostname.includes(":")
    ? `[${addr.hostname}]:${addr.port}`
    : `${addr.hostname}:${addr.port}`;
}
