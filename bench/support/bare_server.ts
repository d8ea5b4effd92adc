// The baseline: a bare Deno.serve handler that reads the body and answers 201.
//   deno run -A bench/support/bare_server.ts [port] [threads]
// With threads > 1 the port is opened with SO_REUSEPORT and threads - 1
// workers (bare_worker.ts) serve the same handler on it: the ceiling for
// ingest on several threads.
import { bareHandler } from "./bare_handler.ts";
import { benchArgs } from "./args.ts";

const { positionals } = benchArgs({}, { allowPositionals: true });
const port = Number(positionals[0] ?? 0);
const threads = Number(positionals[1] ?? 1);
const server = Deno.serve(
  { hostname: "127.0.0.1", port, reusePort: threads > 1, onListen: () => {} },
  bareHandler,
);
await Promise.all(Array.from({ length: threads - 1 }, () => {
  const worker = new Worker(new URL("./bare_worker.ts", import.meta.url), { type: "module" });
  return new Promise((resolve) => {
    worker.onmessage = resolve;
    worker.postMessage(server.addr.port);
  });
}));
console.log(`listening ${server.addr.port}`);
