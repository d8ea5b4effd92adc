// A funnel-like writer for the crash test: opens a ledger, appends from concurrent
// callers and prints every acknowledged record (`ack <seq> <payload>`) as soon as
// its append resolves. The test kills this process with SIGKILL at a random moment.
import {
  Ledger,
  openBackend,
  parseLedgerUri,
  type StoreCredentials,
} from "../../src/ledger/mod.ts";

interface ChildConfig {
  readonly uri: string;
  readonly run: number;
  readonly workers: number;
  readonly credentials?: StoreCredentials;
}

const config = JSON.parse(Deno.args[0] ?? "{}") as ChildConfig;
const encoder = new TextEncoder();
const say = (line: string): void => {
  const bytes = encoder.encode(line + "\n");
  let done = 0;
  while (done < bytes.length) done += Deno.stdout.writeSync(bytes.subarray(done));
};

const ledger = new Ledger(await openBackend(parseLedgerUri(config.uri), config.credentials));
const track = (await ledger.track({ broadcast: ["crash"], track: "test" }, true))!;
say(`ready ${track.newest?.seq ?? -1}`);

async function worker(w: number): Promise<void> {
  for (let i = 0;; i++) {
    const payload = JSON.stringify({ r: config.run, w, i });
    const entry = await track.append({ payload, idempotencyKey: `${config.run}-${w}-${i}` });
    say(`ack ${entry.seq} ${payload}`);
  }
}

await Promise.all(Array.from({ length: config.workers }, (_, w) => worker(w)));
