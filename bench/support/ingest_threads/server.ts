/**
 * The funnel's ingest on several threads, as an experiment:
 *
 *   deno run -A bench/support/ingest_threads/server.ts [--threads N] [--pipeline] [--keys keys.json]
 *
 * The main thread runs the funnel's own handler (`funnelHandler`, memory
 * ledger, no live side) on a port opened with SO_REUSEPORT, and `N - 1`
 * workers (`ingest_worker.ts`) listen on the same port; the kernel spreads
 * connections across them. With `--pipeline` the main thread only commits
 * and all N HTTP threads are workers. Workers check path, credential and body, and
 * hand records to the main thread's FunnelService: one committer per track,
 * so commit order, idempotency and rate limits stay where they were. Prints
 * `listening <port>` once every thread listens.
 */
import { benchArgs } from "../args.ts";
import { createVerifier, keySourceFrom } from "../../../src/auth/mod.ts";
import { funnelHandler, FunnelService } from "../../../src/funnel/mod.ts";
import { errorResponse } from "../../../src/funnel/mod.ts";
import { committedJson } from "../../../src/funnel/mod.ts";
import { TrackPaths } from "../../../src/funnel/mod.ts";
import { SAME_ORIGIN_ONLY } from "../../../src/http/mod.ts";
import { Ledger, MemoryBackend } from "../../../src/ledger/mod.ts";
import { batcher, type FromWorker, RECORD_STRIDE } from "./messages.ts";

// Parsed track paths kept, as the funnel's router keeps its own.
const paths = new TrackPaths();

const { values } = benchArgs({
  threads: { type: "string", default: "1" },
  pipeline: { type: "boolean", default: false },
  keys: { type: "string" },
});
const threads = Number(values.threads);
const keys = values.keys;
const workers = values.pipeline ? threads : threads - 1;
const verifier = keys ? await createVerifier(keySourceFrom(keys)) : undefined;
const ledger = new Ledger(new MemoryBackend());
const service = new FunnelService({ ledger });
const logError = (message: string, error: unknown) => console.error(message, error);
const handler = funnelHandler({ service, verifier, cors: SAME_ORIGIN_ONLY, logError });
// In a pipeline the main thread still binds the port first (to learn it),
// then stops accepting once a worker listens on it too.
const server = Deno.serve(
  { hostname: "127.0.0.1", port: 0, reusePort: workers > 0, onListen: () => {} },
  handler,
);
const port = server.addr.port;

function startWorker(): Promise<void> {
  const worker = new Worker(new URL("./ingest_worker.ts", import.meta.url), { type: "module" });
  let answers: unknown[] = [];
  let received = 0;
  const schedule = batcher(() => {
    const items = answers;
    answers = [];
    worker.postMessage({ kind: "answers", items, received });
    received = 0;
  });
  const answer = (id: number, status: number, body: string, extra: unknown) => {
    answers.push(id, status, body, extra);
    schedule();
  };
  const fail = async (id: number, error: unknown) => {
    const response = errorResponse(error, logError);
    answer(id, response.status, await response.text(), Object.fromEntries(response.headers));
  };
  return new Promise((resolve) => {
    worker.onmessage = (event: MessageEvent<FromWorker>) => {
      const message = event.data;
      if (message.kind === "listening") return resolve();
      const items = message.items;
      received++;
      schedule();
      for (let i = 0; i < items.length; i += RECORD_STRIDE) {
        const id = items[i] as number;
        const sender = (items[i + 2] as string | null) ?? undefined;
        const key = (items[i + 5] as string | null) ?? undefined;
        let path;
        try {
          path = paths.of(items[i + 1] as string);
        } catch (error) {
          fail(id, error);
          continue;
        }
        service.post(
          path,
          { sender, limitKey: items[i + 3] as string },
          items[i + 4] as string,
          key,
        )
          .then(
            (outcome) =>
              answer(
                id,
                201,
                committedJson(outcome.group, outcome.wallclock),
                outcome.replayed ? REPLAYED : null,
              ),
            (error) => fail(id, error),
          );
      }
    };
    worker.postMessage({ kind: "start", port, keys });
  });
}

const REPLAYED = { "idempotent-replayed": "true" };

await Promise.all(Array.from({ length: workers }, startWorker));
if (values.pipeline) await server.shutdown();
console.log(`listening ${port}`);
