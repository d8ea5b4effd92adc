/**
 * One-frame moq-lite-05 groups/s (our moq layer, server publishes, client
 * subscribes) over our WebTransport next to native QUIC, both through the
 * same combined listener in the same run, with the same window of unread groups.
 *
 *   deno run -A bench/webtransport_groups.ts [--groups N] [--size BYTES] [--window W]
 */
import { generateDevCertificate } from "../src/certs/mod.ts";
import { listen } from "../src/transport/mod.ts";
import { connectQuicSession } from "../src/transport/mod.ts";
import type { Session } from "../src/transport/mod.ts";
import { connectWebTransport } from "../src/transport/mod.ts";
import { type Figures, moqGroups } from "./support/moq_groups.ts";
import { benchArgs } from "./support/args.ts";
import { VERSIONS } from "../src/moq/mod.ts";

const { values } = benchArgs({
  groups: { type: "string", default: "10000" },
  size: { type: "string", default: "100" },
  window: { type: "string", default: "8" },
});

const cert = await generateDevCertificate();
const incoming: Session[] = [];
let wakeServer: (() => void) | undefined;
const server = await listen({
  protocols: VERSIONS,
  certPem: cert.certPem,
  keyPem: cert.keyPem,
  onSession: (s) => {
    incoming.push(s);
    wakeServer?.();
  },
});
async function nextServerSession(): Promise<Session> {
  while (incoming.length === 0) await new Promise<void>((r) => (wakeServer = r));
  return incoming.shift()!;
}

async function dial(kind: "quic" | "webtransport"): Promise<Session> {
  const port = server.addr.port;
  return kind === "quic"
    ? await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
      serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
      alpn: ["moq-lite-05"],
    })
    : await connectWebTransport(new URL(`https://localhost:${port}/bench`), {
      serverCertificateHashes: [cert.sha256],
      protocols: ["moq-lite-05"],
    });
}

/** Groups per second and MB/s for `count` one-frame groups of `size` bytes. */
async function run(
  kind: "quic" | "webtransport",
  count: number,
  size: number,
  window: number,
): Promise<Figures> {
  const client = await dial(kind);
  const server = await nextServerSession();
  const figures = await moqGroups(client, server, count, size, window);
  await client.closed;
  return figures;
}

const groups = Number(values.groups);
const size = Number(values.size);
const window = Number(values.window);
await run("quic", 500, size, window); // warm-up
await run("webtransport", 500, size, window);
const quic = await run("quic", groups, size, window);
const wt = await run("webtransport", groups, size, window);
console.log(`${groups} one-frame moq-lite-05 groups of ${size} B, window ${window}:`);
for (const [name, f] of [["native QUIC", quic], ["WebTransport", wt]] as const) {
  console.log(
    `${name.padEnd(13)} ${f.perSecond.toFixed(0).padStart(7)} groups/s ${
      f.mbPerSecond.toFixed(2).padStart(7)
    } MB/s  ratio ${(f.perSecond / quic.perSecond).toFixed(2)}`,
  );
}
await server.stop();
