// Relay load generator: `deno run -A bench/loadgen.ts --subscribers 100 --rate 30 --size 1200`
// (same as `deno task loadgen ...`). The code lives in bench/loadgen/.
import { runLoadgen } from "./loadgen/mod.ts";

if (import.meta.main) Deno.exit(await runLoadgen(Deno.args));
