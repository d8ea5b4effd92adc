// A chaos run's schedule: what the workload does and which faults happen when,
// drawn from one seed before the run starts. It is plain JSON, printed on
// failure and read back by `--replay`, so a failing run can be repeated
// exactly (the same faults at the same offsets, the same bursts).
import { seededRandom } from "../support/random.ts";
import { type Scenario, scenarioNamed, SCENARIOS } from "./scenarios.ts";

/** The steady load of a run. */
export interface Workload {
  /** Records posted per second by the steady senders. */
  readonly ratePerSecond: number;
  /** Bytes of padding in a steady record (small: tens of bytes; large: up to 60 KiB). */
  readonly recordBytes: number;
  /** Durable Streams appends per second (0: no stream). */
  readonly streamAppendsPerSecond: number;
}

/** A burst: `count` POSTs sent at once, each padded to `bytes`. */
export interface BurstEvent {
  readonly atMs: number;
  readonly kind: "burst";
  readonly count: number;
  readonly bytes: number;
}

/** A fault of `kind` on `target`, lasting `forMs` (then healed). */
export interface FaultEvent {
  readonly atMs: number;
  readonly kind: string;
  readonly target: string;
  readonly forMs: number;
  /** Share of datagrams dropped, for `loss`. */
  readonly loss?: number;
}

/** Everything one run does, reproducible from this value alone. */
export interface Schedule {
  readonly seed: number;
  readonly scenario: string;
  /** How long the workload and faults run; then faults are healed and delivery is awaited. */
  readonly durationMs: number;
  readonly workload: Workload;
  readonly bursts: readonly BurstEvent[];
  readonly faults: readonly FaultEvent[];
}

/** What drawing a schedule needs from a fault kind: the targets it can hit in a scenario. */
export type TargetsOf = (kind: string, scenario: Scenario) => readonly string[];

/** Options of {@linkcode drawSchedule}. */
export interface DrawOptions {
  readonly seed: number;
  readonly durationMs: number;
  /** Scenarios to draw from (default all). */
  readonly scenarios?: readonly string[];
  /** Fault kinds allowed (default each scenario's own). */
  readonly faults?: readonly string[];
  /** Largest burst (default 3,000 POSTs at once; 0: no bursts). */
  readonly maxBurst?: number;
}

/** Draws the schedule of one run from `options.seed`. */
export function drawSchedule(options: DrawOptions, targetsOf: TargetsOf): Schedule {
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const between = (lo: number, hi: number): number => Math.round(lo + random() * (hi - lo));
  const names = options.scenarios ?? SCENARIOS.map((s) => s.name);
  const scenario = scenarioNamed(pick(names));
  const duration = options.durationMs;
  const large = random() < 0.3;
  const workload: Workload = {
    ratePerSecond: between(10, 60),
    recordBytes: large ? between(4_000, 60_000) : between(0, 200),
    streamAppendsPerSecond: random() < 0.7 ? between(5, 20) : 0,
  };
  const bursts: BurstEvent[] = [];
  const maxBurst = options.maxBurst ?? 3_000;
  const burstCount = maxBurst <= 0 ? 0 : between(1, Math.max(1, Math.floor(duration / 8_000)));
  for (let i = 0; i < burstCount; i++) {
    const bigRecords = random() < 0.2;
    bursts.push({
      atMs: between(1_000, Math.max(1_000, duration - 2_000)),
      kind: "burst",
      // Large records in smaller bursts: 200 × 60 KiB is already 12 MiB at once.
      count: bigRecords
        ? between(Math.min(50, maxBurst), Math.min(300, maxBurst))
        : between(Math.min(200, maxBurst), maxBurst),
      bytes: bigRecords ? between(8_000, 60_000) : between(0, 100),
    });
  }
  const kinds = (options.faults ?? scenario.faults).filter((k) =>
    scenario.faults.includes(k) && targetsOf(k, scenario).length > 0
  );
  const faults: FaultEvent[] = [];
  // About one fault every 4 s, none in the first second (the subscribers settle in) nor
  // after the workload's end.
  const faultCount = kinds.length === 0 ? 0 : between(1, Math.max(1, Math.floor(duration / 4_000)));
  for (let i = 0; i < faultCount; i++) {
    const kind = pick(kinds);
    const atMs = between(1_000, Math.max(1_000, duration - 1_500));
    const forMs = Math.min(between(300, 3_000), Math.max(300, duration - atMs));
    const fault: FaultEvent = { atMs, kind, target: pick(targetsOf(kind, scenario)), forMs };
    faults.push(kind === "loss" ? { ...fault, loss: between(2, 30) / 100 } : fault);
  }
  bursts.sort((a, b) => a.atMs - b.atMs);
  faults.sort((a, b) => a.atMs - b.atMs);
  return {
    seed: options.seed,
    scenario: scenario.name,
    durationMs: duration,
    workload,
    bursts,
    faults,
  };
}

/** The schedule as one line of JSON (what a failure prints and `--replay` reads). */
export function formatSchedule(schedule: Schedule): string {
  return JSON.stringify(schedule);
}

/** Reads a schedule printed by {@linkcode formatSchedule}; throws on anything else. */
export function parseSchedule(text: string): Schedule {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new SyntaxError(`Cannot parse schedule: ${e instanceof Error ? e.message : e}`);
  }
  const s = value as Partial<Schedule>;
  if (
    typeof s !== "object" || s === null || typeof s.seed !== "number" ||
    typeof s.scenario !== "string" || typeof s.durationMs !== "number" ||
    typeof s.workload !== "object" || !Array.isArray(s.bursts) || !Array.isArray(s.faults)
  ) {
    throw new TypeError(
      "Cannot read schedule: seed, scenario, durationMs, workload, bursts, faults",
    );
  }
  scenarioNamed(s.scenario);
  return s as Schedule;
}

/** The seed of run `index` of a campaign started with `seed`. */
export function runSeed(seed: number, index: number): number {
  return (seed + Math.imul(index, 0x9e3779b1)) >>> 0;
}
