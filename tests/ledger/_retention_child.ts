// A funnel-like process for the retention crash test: opens a ledger at its URI and
// runs one retention pass (keep `count` records per track, or compaction by the
// `compact` field), saying `start` before it, `trimmed <track> <n>` (or
// `compacted <track> <n>`) after each track and `done` after all. The test kills it with SIGKILL while the pass runs.
import {
  Ledger,
  openBackend,
  parseLedgerUri,
  Retention,
  type StoreCredentials,
} from "../../src/ledger/mod.ts";

interface ChildConfig {
  readonly uri: string;
  readonly count: number;
  readonly compact?: string;
  readonly credentials?: StoreCredentials;
}

const config = JSON.parse(Deno.args[0] ?? "{}") as ChildConfig;
const say = (line: string): void => {
  Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
};

const ledger = new Ledger(await openBackend(parseLedgerUri(config.uri), config.credentials));
const retention = new Retention(ledger, {
  config: {
    default: config.compact === undefined
      ? { maxCount: config.count }
      : { compactKey: config.compact },
    rules: [],
  },
  onRemoved: (track, records) => say(`trimmed ${track.path.broadcast.join("/")} ${records}`),
  onCompacted: (track, records) => say(`compacted ${track.path.broadcast.join("/")} ${records}`),
});
say("start");
const report = await retention.pass();
say(`done ${report?.removed}`);
await ledger.close();
