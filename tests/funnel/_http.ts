// Starts a real funnel on 127.0.0.1:0 with a memory ledger for HTTP tests.
import { createVerifier, MemoryKeySource, type Verifier } from "../../src/auth/mod.ts";
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { type RunningFunnel, startFunnel } from "../../src/funnel/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import { keySetOf, makeKey, NOW_MS, signWith, type TestKey } from "../support/credentials.ts";

export { claims, makeKey, NOW, NOW_MS, signWith } from "../support/credentials.ts";

/** A funnel under test, its base URL and a hand-driven clock. */
export interface TestFunnel extends AsyncDisposable {
  readonly funnel: RunningFunnel;
  readonly base: string;
  /** Milliseconds; advance it to refill rate limits. */
  clock: { now: number };
  readonly keySource?: MemoryKeySource;
}

/** Starts a funnel with `env` on top of a loopback ingest and no MoQ listener. */
export async function startTestFunnel(
  env: Record<string, string> = {},
  options: { keys?: TestKey[]; bodyTimeoutMs?: number } = {},
): Promise<TestFunnel> {
  const config = loadFunnelConfig({
    FUNNEL_ADDR: "127.0.0.1:0",
    FUNNEL_SERVE_ADDR: "none",
    ...env,
  });
  const clock = { now: NOW_MS };
  let verifier: Verifier | undefined;
  let keySource: MemoryKeySource | undefined;
  if (options.keys) {
    keySource = new MemoryKeySource(await keySetOf(...options.keys));
    verifier = await createVerifier(keySource, { now: () => clock.now });
  }
  const funnel = await startFunnel(config, {
    ...(verifier ? { verifier } : {}),
    now: () => clock.now,
    log: silentLogger,
    ...(options.bodyTimeoutMs !== undefined ? { bodyTimeoutMs: options.bodyTimeoutMs } : {}),
  });
  const base = `http://127.0.0.1:${funnel.addr.port}`;
  return {
    funnel,
    base,
    clock,
    ...(keySource ? { keySource } : {}),
    [Symbol.asyncDispose]: () => funnel.stop(),
  };
}

/** Response status, headers and parsed body (JSON when there is one). */
export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  // deno-lint-ignore no-explicit-any
  readonly json: any;
}

/** Sends a request and reads the whole reply. */
export async function call(
  base: string,
  method: string,
  path: string,
  init: { body?: BodyInit; headers?: Record<string, string>; token?: string } = {},
): Promise<Reply> {
  const headers = { ...(init.headers ?? {}) };
  if (init.token) headers["authorization"] = `Bearer ${init.token}`;
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  const text = await response.text();
  let json: unknown = undefined;
  if (text !== "") {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Sends raw bytes over TCP so paths like /a/../b reach the server unnormalised. */
export async function rawRequest(port: number, requestLine: string): Promise<number> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(
      new TextEncoder().encode(`${requestLine}\r\nHost: x\r\nConnection: close\r\n\r\n`),
    );
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(4096);
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
    }
    const head = new TextDecoder().decode(chunks[0] ?? new Uint8Array());
    return Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  } finally {
    conn.close();
  }
}

/** A credential for `key` with the given scopes and subject, valid at NOW. */
export function tokenFor(
  key: TestKey,
  scopes: unknown[],
  extra: Record<string, unknown> = {},
): Promise<string> {
  const now = NOW_MS / 1000;
  return signWith(key, { sub: "alice", scopes, iat: now, nbf: now, exp: now + 3600, ...extra });
}

/** A fresh signing key (re-exported for symmetry with tokenFor). */
export const newKey = makeKey;
