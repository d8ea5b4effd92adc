// Runs a sluice command (`relay` or `funnel`) with a hook for measuring
// memory: on SIGUSR2 it collects garbage (when started with
// --v8-flags=--expose-gc) and prints one `gc-host:` line with its memory.
// The soak and fuzz runs use it so RSS after GC is comparable wave to wave.
import { main } from "../../src/cli.ts";

const gc = (globalThis as { gc?: () => void }).gc;
const libc = Deno.env.get("GC_HOST_TRIM") === "1"
  ? Deno.dlopen("libc.so.6", { malloc_trim: { parameters: ["usize"], result: "i32" } })
  : undefined;
Deno.addSignalListener("SIGUSR2", () => {
  gc?.();
  gc?.();
  const m = Deno.memoryUsage();
  const trimmed = libc ? libc.symbols.malloc_trim(0n) : undefined;
  const t = Deno.memoryUsage();
  console.error(
    `gc-host: ${
      JSON.stringify({
        gc: gc !== undefined,
        rss: m.rss,
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        ...(trimmed !== undefined ? { trimmed, rssAfterTrim: t.rss } : {}),
      })
    }`,
  );
});
Deno.exit(await main(Deno.args));
