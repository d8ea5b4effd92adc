// What a listen address with an empty host (`:port`) binds. One socket on `::` takes IPv6 and,
// on a dual-stack host (Linux with net.ipv6.bindv6only=0, its default), IPv4 as well: clients
// that dial `localhost` as ::1 reach the server too (Chromium's WebTransport dials ::1 alone and
// does not fall back to 127.0.0.1). Deno cannot clear IPV6_V6ONLY on a socket, so where `::`
// would take IPv6 alone, or cannot be bound (no IPv6 on the host), `0.0.0.0` is bound instead,
// and the reason is kept for the startup log.
import { errorText } from "../error_text/mod.ts";

/** What `:port` binds on this host. */
export interface EveryInterface {
  /** `::` (IPv6 and IPv4 on one socket) or `0.0.0.0` (IPv4 only). */
  readonly hostname: "::" | "0.0.0.0";
  /** Why IPv4 only, when `hostname` is `0.0.0.0`. */
  readonly ipv4Only?: string;
}

/** Binds a TCP listener, as `Deno.listen` does; the probe's one way to reach the host. */
export type ProbeListen = (options: { hostname: string; port: number }) => {
  readonly addr: Deno.Addr;
  close(): void;
};

/**
 * Finds out what `:port` should bind: binds `::` on a free TCP port and then
 * `0.0.0.0` on the same port. The second bind fails while the IPv6 socket
 * holds that port for IPv4 too (dual-stack), so `::` is the answer; when it
 * succeeds, an IPv6 socket here takes no IPv4 and `0.0.0.0` is. When `::`
 * cannot be bound at all (EAFNOSUPPORT on a kernel without IPv6), `0.0.0.0`
 * is the answer. Both probe sockets are closed before it returns.
 *
 * @example
 * ```ts
 * const { hostname, ipv4Only } = probeEveryInterface();
 * if (ipv4Only) console.warn(`:port listens on IPv4 only: ${ipv4Only}`);
 * ```
 */
export function probeEveryInterface(listen: ProbeListen = Deno.listen): EveryInterface {
  let v6: ReturnType<ProbeListen>;
  try {
    v6 = listen({ hostname: "::", port: 0 });
  } catch (e) {
    const why = noIpv6(e) ? "this host has no IPv6" : "[::] cannot be bound here";
    return { hostname: "0.0.0.0", ipv4Only: `${why} (${errorText(e)})` };
  }
  try {
    const port = (v6.addr as Deno.NetAddr).port;
    try {
      listen({ hostname: "0.0.0.0", port }).close();
    } catch {
      // The port is taken for IPv4 by the IPv6 socket (or IPv4 cannot be bound at all): `::` it is.
      return { hostname: "::" };
    }
    return {
      hostname: "0.0.0.0",
      ipv4Only: "an IPv6 socket on this host takes no IPv4 (net.ipv6.bindv6only=1); " +
        "give [::]:port for IPv6",
    };
  } finally {
    v6.close();
  }
}

// The errors of binding an IPv6 address on a host without IPv6: EAFNOSUPPORT ("Address family
// not supported by protocol"), EPROTONOSUPPORT, EADDRNOTAVAIL (Deno's AddrNotAvailable).
function noIpv6(e: unknown): boolean {
  return e instanceof Deno.errors.AddrNotAvailable ||
    /address family not supported|protocol not supported/i.test(errorText(e));
}

let probed: EveryInterface | undefined;

/** {@linkcode probeEveryInterface} on this host, once per process. */
export function everyInterface(): EveryInterface {
  return probed ??= probeEveryInterface();
}

/**
 * The hostname to bind for a listen address's host: an empty host (`:port`,
 * every interface) becomes {@linkcode everyInterface}'s; any other is kept.
 *
 * @example
 * ```ts
 * Deno.listen({ hostname: bindHostname(""), port: 0 }); // "::" on a dual-stack host
 * ```
 */
export function bindHostname(hostname: string): string {
  return hostname === "" ? everyInterface().hostname : hostname;
}

/**
 * For the startup log: why a listen address given as `:port` (`hostname`
 * empty) serves IPv4 only on this host; undefined when it serves both, or
 * when the host was named.
 */
export function ipv4OnlyReason(hostname: string): string | undefined {
  return hostname === "" ? everyInterface().ipv4Only : undefined;
}
