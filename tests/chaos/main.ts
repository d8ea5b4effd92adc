// `deno task chaos`: the seeded fault campaign. See docs/reliability.md.
//
//   deno task chaos [--seed N] [--duration S] [--run-seconds S] [--runs N]
//                   [--scenarios a,b] [--faults k1,k2] [--max-burst N]
//   deno task chaos --replay '<schedule JSON a failure printed>' | --replay <file, one a line>
import { parseArgs } from "node:util";
import { quiet } from "../support/quiet.ts";
import { runCampaign, summarize } from "./campaign.ts";
import { parseSchedule } from "./schedule.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    seed: { type: "string" },
    duration: { type: "string", default: "900" },
    "run-seconds": { type: "string", default: "12" },
    runs: { type: "string" },
    scenarios: { type: "string" },
    faults: { type: "string" },
    "max-burst": { type: "string" },
    replay: { type: "string" },
    // Accepted and ignored: the shipped funnel flags now let the AWS SDK read os.release().
    "s3-os-release": { type: "boolean", default: false },
  },
});

const number = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`Cannot read --${name} "${text}"`);
  return n;
};
const list = (text: string | undefined) => text?.split(",").map((s) => s.trim()).filter(Boolean);

using _q = quiet();
const seed = number("seed", values.seed) ?? crypto.getRandomValues(new Uint32Array(1))[0]!;
// --replay takes one schedule as printed, or a file of them, one a line.
const replay = values.replay === undefined
  ? undefined
  : (values.replay.trim().startsWith("{") ? values.replay : await Deno.readTextFile(values.replay))
    .split("\n").filter((line) => line.trim() !== "").map(parseSchedule);
const runs = number("runs", values.runs);
const maxBurst = number("max-burst", values["max-burst"]);
const scenarios = list(values.scenarios);
const faults = list(values.faults);
console.log(replay ? `chaos: replaying ${replay.length} schedules` : `chaos: seed ${seed}`);
const result = await runCampaign({
  seed,
  budgetMs: number("duration", values.duration)! * 1000,
  runMs: number("run-seconds", values["run-seconds"])! * 1000,
  ...(runs !== undefined ? { runs } : {}),
  ...(maxBurst !== undefined ? { maxBurst } : {}),
  ...(scenarios ? { scenarios } : {}),
  ...(faults ? { faults } : {}),
  ...(replay ? { replay } : {}),
  log: (line) => console.log(line),
});
for (const line of summarize(replay ? replay[0]!.seed : seed, result)) console.log(line);
Deno.exit(result.failed.length === 0 ? 0 : 1);
