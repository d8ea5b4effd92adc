// Relay load generator: `deno run -A bench/loadgen.ts --subscribers 100 --rate 30 --size 1200`
// (same as `deno task loadgen ...`). The code lives in bench/support/loadgen/.
import { runLoadgen } from "./support/loadgen/mod.ts";

if (import.meta.main) Deno.exit(await runLoadgen(Deno.args));
