// Tests that need an outside service skip where it is missing, so a laptop
// without PostgreSQL or Chromium still runs the rest. In CI (CI=true) a skip
// would hide an untested backend, so there a missing service fails the run.
// S3 is not listed: its tests start s3rver in-process and never skip.

/** A service some tests need that the test process cannot start itself. */
export type Service = "PostgreSQL" | "Chromium" | "OpenSSL" | "tmpfs" | "Podman";

const failing = new Set<Service>();

/**
 * The `ignore` value for a test that needs `service`: false when `missing` is
 * undefined, true when it says why the service is missing (its detector prints
 * the SKIP note). With `CI=true` a missing service also registers, once per
 * test file and service, a test named "<service> is available (CI=true)" that
 * fails with that reason.
 *
 * @example
 * ```ts
 * Deno.test({ name: "…", ignore: ignoreWithout("Chromium", chromiumMissing), fn });
 * ```
 */
export function ignoreWithout(service: Service, missing: string | undefined): boolean {
  if (missing === undefined) return false;
  if (Deno.env.get("CI") === "true" && !failing.has(service)) {
    failing.add(service);
    Deno.test(`${service} is available (CI=true)`, () => {
      throw new Error(
        `${service} is missing (${missing}); with CI=true the tests that need it must run, not skip`,
      );
    });
  }
  return true;
}

let ipv6Loopback: string | null | undefined;

/**
 * Why this host has no IPv6 loopback (`::1` cannot be bound), or undefined
 * when it has one. Tests skip their IPv6 half without it (a container started
 * without IPv6, a kernel booted with ipv6.disable=1), also with CI=true: what
 * they check there is the IPv4 half. The first call that finds it missing
 * prints a note.
 */
export function ipv6LoopbackMissing(): string | undefined {
  if (ipv6Loopback === undefined) {
    try {
      Deno.listen({ hostname: "::1", port: 0 }).close();
      ipv6Loopback = null;
    } catch (e) {
      ipv6Loopback = `::1 cannot be bound: ${e instanceof Error ? e.message : String(e)}`;
      console.warn(`NOTE: ${ipv6Loopback}: the IPv6 halves of the tests are SKIPPED`);
    }
  }
  return ipv6Loopback ?? undefined;
}
