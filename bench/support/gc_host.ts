// Runs a sluice command (`relay` or `funnel`) with a hook for measuring
// memory: on SIGUSR2 it collects garbage (when started with
// --v8-flags=--expose-gc) and prints one `gc-host:` line with its memory.
// The soak and fuzz runs use it so RSS after GC is comparable wave to wave.
import { main } from "../../src/cli.ts";

const gc = (globalThis as { gc?: () => void }).gc;
Deno.addSignalListener("SIGUSR2", () => {
  gc?.();
  gc?.();
  const m = Deno.memoryUsage();
  console.error(
    `gc-host: ${
      JSON.stringify({
        gc: gc !== undefined,
        rss: m.rss,
        heapUsed: m.heapUsed,
        external: m.external,
      })
    }`,
  );
});
Deno.exit(await main(Deno.args));
