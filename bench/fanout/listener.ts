// Child role "listener": the funnel's MoQ listener worker fed committed records.
import { BROADCAST, size, TRACK, values } from "./options.ts";
import { pace } from "./pace.ts";
import { type LedgerEntry, parseTrackPath } from "../../src/ledger/mod.ts";
import { startWorkerListener } from "../../src/funnel/mod.ts";
import { SAME_ORIGIN_ONLY } from "../../src/http/mod.ts";

/** Child: the funnel's listener worker, fed committed records at `rate`/s on "rate R". */
export async function listenerRole(): Promise<void> {
  const dir = values.dir;
  const listener = await startWorkerListener({
    hostname: "127.0.0.1",
    port: 0,
    certPem: await Deno.readTextFile(`${dir}/cert.pem`),
    keyPem: await Deno.readTextFile(`${dir}/key.pem`),
    verifier: undefined,
    cors: SAME_ORIGIN_ONLY,
    log: { debug() {}, info() {}, warn() {}, error() {} },
  });
  const path = parseTrackPath(`${BROADCAST}/${TRACK}`);
  const payload = JSON.stringify("x".repeat(Math.max(0, size - 2)));
  let seq = 0;
  const entry = (): LedgerEntry => ({
    epoch: 1,
    seq: seq++,
    wallclock: BigInt(Date.now()) * 1_000_000n,
    payload,
  });
  listener.trackCreated(path, undefined);
  listener.committed(path, [entry()]);
  console.log(JSON.stringify({ port: listener.addr.port }));
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    for (const cmd of line.split("\n")) {
      if (cmd.startsWith("rate ")) {
        const [rate, tick] = cmd.slice(5).split(" ").map(Number);
        pace(rate!, tick!, () => listener.committed(path, [entry()]));
      }
    }
  }
}
