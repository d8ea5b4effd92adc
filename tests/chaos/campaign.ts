// A campaign: runs drawn from one seed until a run count or a time budget is
// reached, each checked against the invariant; a failing run is reported with
// its seed, its schedule and the command that replays it.
import { targetsOf } from "./faults.ts";
import { runOnce, type RunResult } from "./run.ts";
import {
  type DrawOptions,
  drawSchedule,
  formatSchedule,
  runSeed,
  type Schedule,
} from "./schedule.ts";

/** Options of {@linkcode runCampaign}. */
export interface CampaignOptions {
  readonly seed: number;
  /** Stop starting runs after this long, ms. */
  readonly budgetMs: number;
  /** At most this many runs (default no limit). */
  readonly runs?: number;
  /** Workload and fault time of one run, ms. */
  readonly runMs: number;
  readonly scenarios?: readonly string[];
  readonly faults?: readonly string[];
  readonly maxBurst?: number;
  /** Replays exactly these schedules instead of drawing. */
  readonly replay?: readonly Schedule[];
  /** Progress and report lines. */
  readonly log?: (line: string) => void;
}

/** What a campaign found. */
export interface CampaignResult {
  readonly results: readonly RunResult[];
  readonly failed: readonly RunResult[];
}

/** Runs the campaign. */
export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const log = options.log ?? (() => {});
  const start = performance.now();
  const results: RunResult[] = [];
  const failed: RunResult[] = [];
  for (let i = 0;; i++) {
    let schedule: Schedule;
    if (options.replay) {
      if (i >= options.replay.length) break;
      schedule = options.replay[i]!;
    } else {
      if (options.runs !== undefined && i >= options.runs) break;
      if (i > 0 && performance.now() - start > options.budgetMs) break;
      const draw: DrawOptions = {
        seed: runSeed(options.seed, i),
        durationMs: options.runMs,
        ...(options.scenarios ? { scenarios: options.scenarios } : {}),
        ...(options.faults ? { faults: options.faults } : {}),
        ...(options.maxBurst !== undefined ? { maxBurst: options.maxBurst } : {}),
      };
      schedule = drawSchedule(draw, targetsOf);
    }
    log(
      `run ${
        i + 1
      }: seed ${schedule.seed}, ${schedule.scenario}, ${schedule.workload.ratePerSecond}/s × ${schedule.workload.recordBytes} B, bursts ${
        schedule.bursts.map((b) => b.count).join("+") || "none"
      }, ${schedule.faults.length} faults`,
    );
    let result: RunResult;
    try {
      result = await runOnce(schedule, log);
    } catch (e) {
      // The harness itself failed (a process never started): a failure too, with its schedule.
      result = {
        schedule,
        applied: [],
        answers: {},
        wallMs: 0,
        violations: [{
          what: "the run could not complete",
          count: 1,
          sample: e instanceof Error ? e.message : String(e),
        }],
        records: 0,
        rawJudged: 0,
        rawEnded: 0,
        rawDelivered: 0,
        feedGaps: 0,
        feedGapRecords: 0,
      };
    }
    results.push(result);
    log(
      `  ${
        result.violations.length === 0 ? "PASS" : "FAIL"
      }: ${result.records} acknowledged checked on ${result.schedule.scenario}, answers ${
        JSON.stringify(result.answers)
      }, raw subscriptions judged ${result.rawJudged} (ended ${result.rawEnded}), feed gaps ${result.feedGaps}, ${
        Math.round(result.wallMs / 1000)
      } s`,
    );
    if (result.violations.length > 0) {
      failed.push(result);
      for (const v of result.violations) log(`  VIOLATION ${v.what}: ${v.count} (${v.sample})`);
      log(`  seed ${schedule.seed}; schedule (faults as applied):`);
      for (const f of result.applied) {
        log(
          `    ${f.startedMs} ms: ${f.kind} ${f.target} for ${f.forMs} ms${
            f.loss ? ` loss ${f.loss}` : ""
          }`,
        );
      }
      log(`  replay: deno task chaos --replay '${formatSchedule(schedule)}'`);
    }
  }
  return { results, failed };
}

/** The campaign's figures as lines: runs, seeds, faults by kind, records checked, failures. */
export function summarize(seed: number, c: CampaignResult): string[] {
  const faults = new Map<string, number>();
  const scenarios = new Map<string, { runs: number; failed: number }>();
  const found = new Map<string, number[]>();
  let records = 0;
  let wall = 0;
  for (const r of c.results) {
    records += r.records;
    wall += r.wallMs;
    for (const f of r.applied) faults.set(f.kind, (faults.get(f.kind) ?? 0) + 1);
    const s = scenarios.get(r.schedule.scenario) ?? { runs: 0, failed: 0 };
    s.runs++;
    if (r.violations.length > 0) s.failed++;
    scenarios.set(r.schedule.scenario, s);
    const whats = new Set<string>();
    for (const v of r.violations) {
      const what = v.what.replace(/raw-\d/, "raw-n").replace(/kept up from group \d+/, "kept up")
        .replace(/funnel-\d/, "funnel-n");
      if (whats.has(what)) continue;
      whats.add(what);
      found.set(what, [...(found.get(what) ?? []), r.schedule.seed]);
    }
  }
  const lines = [
    `campaign seed ${seed}: ${c.results.length} runs (${c.failed.length} failed), ${
      Math.round(wall / 1000)
    } s of runs, ${records} acknowledged records checked`,
    `scenarios: ${
      [...scenarios].map(([n, s]) => `${n} ${s.runs} (${s.failed} failed)`).join(", ")
    }`,
    `faults: ${[...faults].map(([k, n]) => `${k} ${n}`).join(", ") || "none"}`,
  ];
  for (const [what, seeds] of found) {
    lines.push(
      `found: ${what}: ${seeds.length} runs, seeds ${[...new Set(seeds)].slice(0, 6).join(", ")}`,
    );
  }
  return lines;
}
