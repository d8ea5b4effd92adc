// Helpers for the live tests: a funnel serving MoQ on 127.0.0.1:0 with a
// development certificate, what its subscribers received, and HTTP calls.
import { loadFunnelConfig } from "../../src/config/mod.ts";
import { type FunnelDependencies, type RunningFunnel, startFunnel } from "../../src/funnel/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import type * as Net from "@moq/net";
import type { ReceivedGroup, Subscription } from "../../src/moq/mod.ts";
import { testCertificateFiles } from "./certs.ts";

const decoder = new TextDecoder();

/** A live funnel under test. */
export interface LiveFunnel extends AsyncDisposable {
  readonly funnel: RunningFunnel;
  /** HTTP base URL. */
  readonly base: string;
  /** The own MoQ listener's UDP port. */
  readonly moqPort: number;
  /** Temporary directory holding the certificate files. */
  readonly dir: string;
}

/** Starts a funnel serving MoQ on 127.0.0.1:0 (unless `env` says otherwise). */
export async function startLiveFunnel(
  env: Record<string, string> = {},
  deps: FunnelDependencies = {},
): Promise<LiveFunnel> {
  const files = await testCertificateFiles();
  const funnel = await startFunnel(
    loadFunnelConfig({
      FUNNEL_ADDR: "127.0.0.1:0",
      FUNNEL_SERVE_ADDR: "127.0.0.1:0",
      CERT_FILE: files.cert,
      KEY_FILE: files.key,
      ...env,
    }),
    { log: silentLogger, ...deps },
  );
  return {
    funnel,
    base: `http://127.0.0.1:${funnel.addr.port}`,
    moqPort: funnel.live.listener?.addr.port ?? 0,
    dir: files.dir,
    [Symbol.asyncDispose]: async () => {
      await funnel.stop();
      await Deno.remove(files.dir, { recursive: true });
    },
  };
}

/** A received group as the test compares it: sequence and frame text. */
export interface Got {
  readonly seq: number;
  readonly frame: string;
}

/** Reads the next `n` groups of a subscription. */
export async function take(sub: Subscription, n: number): Promise<Got[]> {
  const it = sub[Symbol.asyncIterator]();
  const out: Got[] = [];
  while (out.length < n) {
    const r: IteratorResult<ReceivedGroup> = await it.next();
    if (r.done) throw new Error(`Subscription ended after ${out.length} of ${n} groups`);
    out.push({ seq: r.value.sequence, frame: decoder.decode(r.value.frames[0]) });
  }
  return out;
}

/** Reads the next `n` groups of an @moq/net subscription. */
export async function takeNet(sub: Net.Track.Subscriber, n: number): Promise<Got[]> {
  const out: Got[] = [];
  while (out.length < n) {
    const group = await sub.recvGroup();
    if (!group) throw new Error("@moq/net subscription ended early");
    const frame = await group.readFrame();
    out.push({ seq: group.sequence, frame: decoder.decode(frame?.payload) });
  }
  return out;
}

/** Posts a JSON body; returns the committed group. */
export async function post(
  base: string,
  path: string,
  body: string,
  token?: string,
): Promise<{ group: string; status: number }> {
  const response = await fetch(`${base}/tracks/${path}`, {
    method: "POST",
    body,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  const text = await response.text();
  if (response.status !== 201) return { group: "", status: response.status };
  return { group: JSON.parse(text).group, status: response.status };
}

/** Sends a request and drops the body; returns the status. */
export async function send(
  base: string,
  method: string,
  path: string,
  token?: string,
): Promise<number> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  await response.body?.cancel();
  return response.status;
}
