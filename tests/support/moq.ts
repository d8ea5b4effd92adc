// MoQ test helpers shared by the moq, WebTransport, relay and funnel tests.
import { generateDevCertificate } from "../../src/certs/mod.ts";
import type { MoqSession } from "../../src/moq/mod.ts";

let cert: ReturnType<typeof generateDevCertificate> | undefined;

/** One development certificate per test process. */
export function testCert(): ReturnType<typeof generateDevCertificate> {
  return cert ??= generateDevCertificate();
}

/** Waits until `moq` sees `path` announced (active), watching `prefix` (all by default). */
export async function seeAnnounced(moq: MoqSession, path: string, prefix = ""): Promise<void> {
  const ac = new AbortController();
  for await (const e of moq.announced(prefix, { signal: ac.signal })) {
    if (e.path === path && e.active) break;
  }
  ac.abort();
}

/** The first `count` distinct broadcast paths `moq` sees announced (active). */
export async function announcedPaths(moq: MoqSession, count: number): Promise<Set<string>> {
  const seen = new Set<string>();
  const ac = new AbortController();
  for await (const e of moq.announced("", { signal: ac.signal })) {
    if (e.active) seen.add(e.path);
    if (seen.size === count) break;
  }
  ac.abort();
  return seen;
}
