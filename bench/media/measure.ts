// One measured window: the receivers' frame timings and the CPU the sending
// processes used meanwhile, with the machine's load average beside them.
import { type Snap, values } from "./options.ts";
import type { Child } from "../fanout/children.ts";
import { CLOCK_TICKS_PER_SECOND, cpuTicks } from "../support/loadgen/proc_stats.ts";
import { sleep } from "../../src/timers/mod.ts";

/** The figures of one configuration. */
export interface Result {
  readonly snap: Snap;
  /** Cores the sending processes (raw sender, or the relays) kept busy over the window. */
  readonly cores: number;
  /** The 1-minute load average at the window's end. */
  readonly load: number;
}

/**
 * Waits for the receivers, calls `start`, lets delivery warm up, then
 * measures `--seconds` of delivery and the CPU of `pids`.
 */
export async function measure(
  pids: readonly number[],
  receivers: Child,
  start: () => void | Promise<void>,
): Promise<Result> {
  const ready = await receivers.line();
  console.error(`  receivers ready (${ready.failed} failed)`);
  await start();
  await sleep(Number(values.warmup) * 1000);
  await receivers.send("start");
  const t0 = performance.now();
  const ticks0 = pids.map(cpuTicks);
  await sleep(Number(values.seconds) * 1000);
  const ticks = pids.map((pid, i) => cpuTicks(pid) - ticks0[i]!);
  const dt = (performance.now() - t0) / 1000;
  await receivers.send("snap");
  const snap = await receivers.line() as unknown as Snap;
  const cores = ticks.reduce((a, b) => a + b, 0) / CLOCK_TICKS_PER_SECOND / dt;
  return { snap, cores, load: loadAverage() };
}

function loadAverage(): number {
  try {
    return Number(Deno.readTextFileSync("/proc/loadavg").split(" ")[0]);
  } catch {
    // not Linux: no figure
    return NaN;
  }
}
