import { lookup } from "node:dns/promises";
import { isIpLiteral } from "../../transport/mod.ts";

/** Resolves a host name to its addresses (IP literals resolve to themselves). */
export type Resolver = (host: string) => Promise<string[]>;

/** The system resolver (hosts file and DNS, as the OS resolves); IP literals resolve to themselves. */
export async function systemResolver(host: string): Promise<string[]> {
  if (isIpLiteral(host)) return [host];
  const found = await lookup(host, { all: true });
  return [...new Set(found.map((a) => a.address))];
}
