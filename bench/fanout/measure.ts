// One measured window: snapshots of the receivers before and after, the CPU each process
// used and the UDP datagrams the machine sent meanwhile.
import { type Snap, values } from "./options.ts";
import type { Child } from "./children.ts";

import { sleep } from "../../src/timers/mod.ts";
import { quantile } from "../support/quantile.ts";
import { CLOCK_TICKS_PER_SECOND, cpuTicks, udpCounters } from "../support/loadgen/proc_stats.ts";
export interface Result {
  readonly perSecond: number;
  /** Length of the measured window, s. */
  readonly seconds: number;
  /** Cores busy over the window (CPU seconds per second): sender, receivers, late, this process. */
  readonly cpu: { sender: number; receivers: number; late: number; bench: number };
  /** UDP datagrams sent on this machine over the window, and those dropped for a full receive buffer. */
  readonly udp: { sent: number; dropped: number };
  readonly sessions: number[];
  readonly skips: number[];
  readonly late: number[];
  readonly failed: number;
}

export async function measure(
  senderPid: number,
  receivers: Child,
  lateReceivers: Child | undefined,
  seconds: number,
  start: () => void | Promise<void>,
  during?: () => Promise<void>,
): Promise<Result> {
  const ready = await receivers.line();
  if (lateReceivers) await lateReceivers.line();
  console.error(`  receivers ready (${ready.failed} failed)`);
  // Delivery starts once every session is set up, so setting them up does not compete with it.
  await start();
  await sleep(Number(values.warmup) * 1000); // warm-up
  await receivers.send("snap");
  const a = await receivers.line() as unknown as Snap;
  const pids = [senderPid, receivers.proc.pid, lateReceivers?.proc.pid ?? NaN, Deno.pid];
  const ticks0 = pids.map(cpuTicks);
  const udp0 = udpCounters();
  if (lateReceivers) {
    await lateReceivers.send("go");
    await lateReceivers.send("late");
  }
  const alongside = during?.();
  await sleep(seconds * 1000);
  await alongside;
  await receivers.send("snap");
  const b = await receivers.line() as unknown as Snap;
  const udp1 = udpCounters();
  const [sender, steadyCpu, lateCpu, bench] = pids.map((pid, i) =>
    (cpuTicks(pid) - ticks0[i]!) / CLOCK_TICKS_PER_SECOND / ((b.at - a.at) / 1000)
  );
  // Sessions that connected during the run get up to 10 s more to finish their setup.
  let late: number[] = [];
  for (let t = 0; lateReceivers && t <= 20; t++) {
    await lateReceivers.send("snap");
    late = (await lateReceivers.line() as unknown as Snap).lateSetup;
    if (!late.some((x) => x < 0)) break;
    await sleep(500);
  }
  const dt = (b.at - a.at) / 1000;
  const n = a.groups.length;
  const rates = b.groups.slice(0, n).map((g, i) => (g - (a.groups[i] ?? 0)) / dt);
  const sessions = rates.filter((_, i) => b.ok[i]);
  // Groups sent after the first snapshot that never arrived: the span of sequences minus arrivals.
  const skips = b.highest.slice(0, n).map((h, i) =>
    Math.max(0, h - (a.highest[i] ?? 0) - (b.groups[i]! - (a.groups[i] ?? 0)))
  ).filter((_, i) => b.ok[i]);
  return {
    perSecond: rates.reduce((x, y) => x + y, 0),
    seconds: dt,
    cpu: { sender: sender!, receivers: steadyCpu!, late: lateCpu!, bench: bench! },
    udp: { sent: udp1.sent - udp0.sent, dropped: udp1.dropped - udp0.dropped },
    sessions,
    skips,
    late,
    failed: Number(ready.failed ?? 0),
  };
}

// Of unsorted `xs`; 0 when there are none.
export function quantileOf(xs: number[], q: number): number {
  return xs.length === 0 ? 0 : quantile([...xs].sort((a, b) => a - b), q);
}
