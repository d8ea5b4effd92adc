/**
 * A burst of N concurrent POSTs to `sluice funnel` of a checkout (its own
 * process, memory ledger, auth off) with one raw @moq/net subscriber: on the
 * funnel's own listener (`listener`, the default), on a `sluice relay` of the
 * same checkout the funnel publishes through (`relay`), or on the far relay
 * of a chain of three (`mesh`: the funnel publishes at A, A <- B <- C). It
 * prints how long until every POST was acknowledged, and how many
 * acknowledged records never reached the subscriber within 15 s. Run it for
 * two checkouts in turn for a before/after (docs/funnel.md, "Flow control on
 * the own listener" and "Flow control through relays").
 *
 *   deno run -A bench/funnel_burst.ts <checkout> <n> [listener|relay|mesh]
 */
import { freeUdpTcpPort } from "../src/transport/mod.ts";
import { testCertificateFiles } from "../tests/support/certs.ts";
import { dialNet, dialOurs, netPath, seeAnnounced } from "../tests/support/moq.ts";
import { ingestBase, type ServerProcess, startServer } from "../tests/support/processes.ts";
const [checkout, nText, via = "listener"] = Deno.args;
const n = Number(nText);
if (!checkout || !(n > 0) || !["listener", "relay", "mesh"].includes(via)) {
  console.error("usage: bench/funnel_burst.ts <checkout> <n> [listener|relay|mesh]");
  Deno.exit(2);
}
const files = await testCertificateFiles();
const cli = `${checkout}/src/cli.ts`;
const processes: ServerProcess[] = [];

/** A relay of the checkout dialing `peer` (a port), if any; its port. */
async function relay(peer?: number): Promise<number> {
  const port = freeUdpTcpPort();
  const p = await startServer("relay", {
    env: {
      RELAY_ADDR: `127.0.0.1:${port}`,
      CERT_FILE: files.cert,
      KEY_FILE: files.key,
      PEER_CA_FILE: files.cert,
      ...(peer ? { PEERS: `127.0.0.1:${peer}` } : {}),
    },
    cli,
  });
  processes.push(p);
  return port;
}

let first: number | undefined; // the relay the funnel publishes at
let far: number | undefined; // the relay the subscriber reads from
if (via !== "listener") {
  first = far = await relay();
  if (via === "mesh") far = await relay(await relay(first));
}
const funnel = await startServer("funnel", {
  env: {
    FUNNEL_ADDR: "127.0.0.1:0",
    FUNNEL_SERVE_ADDR: "127.0.0.1:0",
    CERT_FILE: files.cert,
    KEY_FILE: files.key,
    ...(first ? { RELAY_URL: `moqt://localhost:${first}/`, RELAY_CA_FILE: files.cert } : {}),
  },
  cli,
});
processes.push(funnel);
const text = funnel.lines.join("\n");
const base = ingestBase(funnel);
const port = far ?? Number(/moqt:\/\/127\.0\.0\.1:(\d+)/.exec(text)![1]);
await (await fetch(`${base}/tracks/room/1/chat`, { method: "PUT" })).body?.cancel();
if (far) {
  const watcher = await dialOurs(far);
  await seeAnnounced(watcher, "room/1");
  watcher.close(0, "");
}
const net = await dialNet(port);
const sub = net.consume(netPath("room/1")).track("chat").subscribe({});
await (await fetch(`${base}/tracks/room/1/chat`, { method: "POST", body: '"w"' })).body?.cancel();
await sub.recvGroup();
const got = new Set<number>();
(async () => {
  for (;;) {
    const g = await sub.recvGroup();
    if (!g) return;
    got.add(g.sequence);
  }
})();
const t0 = performance.now();
const seqs = await Promise.all(Array.from({ length: n }, async (_, i) => {
  const r = await fetch(`${base}/tracks/room/1/chat`, {
    method: "POST",
    body: JSON.stringify({ i }),
  });
  const j = await r.json();
  return Number(String(j.group).split("-g")[1]) + 1;
}));
const ackMs = performance.now() - t0;
const deadline = Date.now() + 15_000;
while (Date.now() < deadline && seqs.some((s) => !got.has(s))) {
  await new Promise((r) => setTimeout(r, 100));
}
const missing = seqs.filter((s) => !got.has(s)).length;
const allMs = performance.now() - t0;
console.log(
  `${checkout} n=${n} via ${via}: acknowledged in ${ackMs.toFixed(0)} ms; missing ${missing}${
    missing === 0 ? `; all delivered in ${allMs.toFixed(0)} ms` : " after 15 s"
  }`,
);
net.close();
for (const p of processes.reverse()) await p.stop();
await Deno.remove(files.dir, { recursive: true });
Deno.exit(0);
