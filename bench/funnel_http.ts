/**
 * POST throughput of the funnel over loopback, with auth off and on, next
 * to a bare `Deno.serve` handler measured in the same run. Each server runs
 * in its own process; wrk drives the load when installed, else a raw-TCP
 * Deno client.
 *
 * The three are measured in turn, `--rounds` times (default 3), and the
 * ratios of each round and their medians are printed: on a shared VM one
 * round can be off by a third.
 *
 *   deno run -A bench/funnel_http.ts [--seconds 5] [--connections 32] [--rounds 3]
 */
import { exportJWK, generateKeyPair } from "jose";
import { parseArgs } from "node:util";
import { createSigner, ed25519Thumbprint } from "../src/auth/mod.ts";
import { loadGeneratorName, postLoad, spawnListening } from "./support/post_load.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "5" },
    connections: { type: "string", default: "32" },
    rounds: { type: "string", default: "3" },
  },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const rounds = Number(values.rounds);
const CLI = new URL("../src/cli.ts", import.meta.url).pathname;
const BARE = new URL("./support/bare_server.ts", import.meta.url).pathname;
const PATH = "/tracks/bench/room/chat";
const BODY = '{"kind":"reaction","emoji":"👍","at":1234567890}';
const PORT_LINE = /(?:listening |Ingest: http:\/\/127\.0\.0\.1:)(\d+)/;

async function measure(
  name: string,
  args: string[],
  env: Record<string, string>,
  headers: Record<string, string>,
): Promise<number> {
  const server = await spawnListening(args, env, PORT_LINE);
  try {
    const load = (secs: number) =>
      postLoad({ port: server.port, path: PATH, body: BODY, headers, connections, seconds: secs });
    await load(1); // warm up: JIT, connections
    const r = await load(seconds);
    console.log(
      `${name.padEnd(22)} ${r.perSecond.toFixed(0).padStart(8)} req/s   p50 ${
        r.p50Ms.toFixed(2)
      } ms   p99 ${r.p99Ms.toFixed(2)} ms   errors ${r.errors}`,
    );
    return r.perSecond;
  } finally {
    await server.stop();
  }
}

const dir = await Deno.makeTempDir({ prefix: "sluice-bench-" });
try {
  const { privateKey } = await generateKeyPair("EdDSA", { extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await ed25519Thumbprint(jwk.x!);
  await Deno.writeTextFile(
    `${dir}/keys.json`,
    JSON.stringify({ keys: [{ kty: "OKP", crv: "Ed25519", x: jwk.x, kid }] }),
  );
  const signer = await createSigner({ ...jwk, kid });
  const token = await signer.sign({
    sub: "bench",
    scopes: [{ actions: ["post"], broadcast: { prefix: "bench" } }],
  }, { ttlSeconds: 3600 });

  const funnel = ["run", "-A", CLI, "funnel"];
  const base = { FUNNEL_ADDR: "127.0.0.1:0", FUNNEL_SERVE_ADDR: "none" };
  console.log(`load generator: ${loadGeneratorName()}`);
  console.log(
    `POST throughput, ${connections} keep-alive connections, ${seconds} s each, loopback, ${navigator.hardwareConcurrency} cores`,
  );
  const offRatios: number[] = [];
  const onRatios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    if (rounds > 1) console.log(`round ${round} of ${rounds}`);
    const bare = await measure("bare Deno.serve", ["run", "-A", BARE], base, {});
    const off = await measure("funnel, auth off", funnel, base, {});
    const on = await measure("funnel, auth on", funnel, {
      ...base,
      SLUICE_AUTH_KEYS: `${dir}/keys.json`,
    }, { authorization: `Bearer ${token}` });
    offRatios.push(off / bare);
    onRatios.push(on / bare);
    console.log(
      `auth off: ${percent(off / bare)} of bare; auth on: ${percent(on / bare)} of bare`,
    );
  }
  console.log(
    `median of ${rounds}: auth off ${percent(median(offRatios))} of bare; auth on ${
      percent(median(onRatios))
    } of bare (target >= 60%)`,
  );
} finally {
  await Deno.remove(dir, { recursive: true });
}

function percent(ratio: number): string {
  return `${(100 * ratio).toFixed(0)}%`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
