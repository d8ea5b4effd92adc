/**
 * One-frame groups through one moq-lite session (our client subscribed to
 * our server) next to a raw Deno QUIC loop (one uni stream per message) in
 * the same run, same window of in-flight messages.
 *
 *   deno run -A bench/moq_bench.ts [--groups N] [--size BYTES] [--window W] [--rounds R]
 *
 * prints groups/s and MB/s for both and the moq/raw ratio (sizes 100 B and
 * 16 KiB unless `--size` names one). Under `deno bench` (`deno task bench`)
 * the same loops run as benchmarks: 1000 one-frame groups of 100 B per
 * iteration, the raw QUIC loop as the baseline.
 */
import { generateDevCertificate } from "../src/certs/mod.ts";
import { connectQuicSession, listenQuic } from "../src/transport/mod.ts";
import type { Session } from "../src/transport/mod.ts";
import { type Figures, moqGroups } from "./support/moq_groups.ts";
import { benchArgs } from "./support/args.ts";

const cert = await generateDevCertificate();

async function pair(alpn: string): Promise<{ client: Session; server: Session; stop(): void }> {
  const listener = listenQuic({ cert: cert.certPem, key: cert.keyPem, alpn: [alpn] });
  const it = listener[Symbol.asyncIterator]();
  const serverP = it.next();
  const client = await connectQuicSession(new URL(`moqt://127.0.0.1:${listener.addr.port}/`), {
    serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
    alpn: [alpn],
  });
  const server = (await serverP).value as Session;
  return {
    client,
    server,
    stop() {
      client.close(0, "");
      server.close(0, "");
      listener.stop();
    },
  };
}

/** Raw Deno QUIC: one uni stream per message, at most `window` unread. */
export async function rawLoop(count: number, size: number, window: number): Promise<Figures> {
  const { client, server, stop } = await pair("raw-bench");
  const payload = new Uint8Array(size).fill(7);
  let received = 0;
  let wake: (() => void) | undefined;
  const reader = (async () => {
    const reads: Promise<void>[] = [];
    while (reads.length < count) {
      const s = await client.acceptUni();
      if (!s) break;
      reads.push((async () => {
        let n = 0;
        const r = s.readable.getReader();
        for (;;) {
          const { value, done } = await r.read();
          if (done) break;
          n += value.length;
        }
        if (n !== size) throw new Error(`short message ${n}`);
        received++;
        wake?.();
      })());
    }
    await Promise.all(reads);
  })();
  const start = performance.now();
  // Like the moq publisher: up to 16 streams being opened and written at once.
  const inflight = new Set<Promise<void>>();
  for (let i = 0; i < count; i++) {
    while (i - received >= window) await new Promise<void>((r) => wake = r);
    while (inflight.size >= 16) await Promise.race(inflight);
    const sending: Promise<void> = (async () => {
      const s = await server.openUni();
      const w = s.writable.getWriter();
      await w.write(payload);
      await w.close();
    })().finally(() => inflight.delete(sending));
    inflight.add(sending);
  }
  await Promise.all(inflight);
  await reader;
  const seconds = (performance.now() - start) / 1000;
  stop();
  return { perSecond: count / seconds, mbPerSecond: count * size / seconds / 1e6 };
}

/** moq-lite: groups of one frame from a TrackProducer to a subscriber, at most `window` unread. */
export async function moqLoop(
  version: "moq-lite-05" | "moq-lite-04",
  count: number,
  size: number,
  window: number,
): Promise<Figures> {
  const { client, server, stop } = await pair(version);
  try {
    return await moqGroups(client, server, count, size, window);
  } finally {
    stop();
  }
}

function median(xs: Figures[]): Figures {
  const sorted = [...xs].sort((a, b) => a.perSecond - b.perSecond);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const GROUPS = 1000;

// `deno bench`: registered always, run only under `deno bench`.
Deno.bench({
  name: "raw QUIC: 1000 uni streams of 100 B",
  group: "one-frame groups",
  baseline: true,
  n: 10,
  warmup: 2,
  async fn() {
    await rawLoop(GROUPS, 100, 32);
  },
});

Deno.bench({
  name: "moq-lite-05: 1000 one-frame groups of 100 B",
  group: "one-frame groups",
  n: 10,
  warmup: 2,
  async fn() {
    await moqLoop("moq-lite-05", GROUPS, 100, 32);
  },
});

Deno.bench({
  name: "moq-lite-04: 1000 one-frame groups of 100 B",
  group: "one-frame groups",
  n: 10,
  warmup: 2,
  async fn() {
    await moqLoop("moq-lite-04", GROUPS, 100, 32);
  },
});

// `deno run`: groups/s, MB/s and ratios.
if (import.meta.main) {
  const { values } = benchArgs({
    groups: { type: "string", default: "10000" },
    window: { type: "string", default: "32" },
    rounds: { type: "string", default: "3" },
    size: { type: "string" },
  });
  const groups = Number(values.groups);
  const window = Number(values.window);
  const rounds = Number(values.rounds);
  const sizes = values.size !== undefined ? [Number(values.size)] : [100, 16_384];
  for (const size of sizes) {
    const n = size > 4096 ? Math.max(1000, Math.floor(groups / 4)) : groups;
    // Warm up both paths once (JIT, allocations), then measure in interleaved rounds
    // so background load on a shared machine hits every variant alike.
    await rawLoop(500, size, window);
    await moqLoop("moq-lite-05", 500, size, window);
    const raw: Figures[] = [];
    const v05: Figures[] = [];
    const v04: Figures[] = [];
    for (let r = 0; r < rounds; r++) {
      raw.push(await rawLoop(n, size, window));
      v05.push(await moqLoop("moq-lite-05", n, size, window));
      v04.push(await moqLoop("moq-lite-04", n, size, window));
    }
    const base = median(raw);
    const line = (name: string, f: Figures) =>
      `${name.padEnd(12)} ${f.perSecond.toFixed(0).padStart(8)} groups/s ${
        f.mbPerSecond.toFixed(2).padStart(8)
      } MB/s  ratio to raw ${(f.perSecond / base.perSecond).toFixed(2)}`;
    console.log(`${n} one-frame groups of ${size} B, window ${window}, median of ${rounds}:`);
    console.log(line("raw QUIC", base));
    console.log(line("moq-lite-05", median(v05)));
    console.log(line("moq-lite-04", median(v04)));
  }
}
