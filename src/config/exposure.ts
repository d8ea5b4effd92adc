/**
 * Safe bind defaults. With auth off, anyone who reaches a listener may post,
 * redact, delete streams and subscribe; so without SLUICE_AUTH_KEYS the
 * default addresses are loopback, and an address that reaches further must be
 * given explicitly (the opt-in), which draws a WARNING at startup.
 *
 * @module
 */
import { formatListenAddress, type ListenAddress } from "./parse.ts";

const LOOPBACK = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1)$/i;

/** True when `address` binds a loopback interface only (reachable from this host alone). */
export function isLoopback(address: ListenAddress): boolean {
  return LOOPBACK.test(address.hostname);
}

/** The default listen address for `port`: every interface with auth on, loopback with it off. */
export function defaultListenAddress(port: number, authOn: boolean): ListenAddress {
  return { hostname: authOn ? "" : "127.0.0.1", port };
}

/**
 * The startup warning when auth is off and some of `listeners` (setting
 * name → address) reach beyond this host; undefined when auth is on or every
 * one is loopback. `allows` says what an anonymous client may do there.
 */
export function anonymousExposureWarning(
  authOn: boolean,
  listeners: ReadonlyArray<readonly [string, ListenAddress | undefined]>,
  allows: string,
): string | undefined {
  if (authOn) return undefined;
  const open = listeners.filter((l): l is readonly [string, ListenAddress] =>
    l[1] !== undefined && !isLoopback(l[1])
  );
  if (open.length === 0) return undefined;
  const where = open.map(([name, a]) => `${name}=${formatListenAddress(a)}`).join(", ");
  return `WARNING: SLUICE_AUTH_KEYS is not set and ${where} reaches beyond this host: ` +
    `anyone who can connect ${allows}. Set SLUICE_AUTH_KEYS, or bind 127.0.0.1 (see docs/security.md)`;
}
