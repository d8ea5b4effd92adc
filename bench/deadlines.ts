// What many deadlines on one timer cost as their number grows: a relay holds one per session
// (its credential lease), so N sessions are N deadlines. Two cases, on a hand-moved clock (no
// waiting, CPU only):
// - expiry: N deadlines at distinct times, each firing in its own sweep (credentials issued at
//   different times expire one by one);
// - churn: N deadlines held while the earliest is cancelled and a later one added, N times, the
//   timer firing in between (sessions ending before their credential and new ones arriving).
// Prints CPU per deadline for each N: flat in N is the goal.
import process from "node:process";
import { benchArgs } from "./support/args.ts";
import { Deadlines } from "../src/timers/mod.ts";
import { ManualClock } from "../tests/support/manual_clock.ts";

const { values: v } = benchArgs({
  n: { type: "string", default: "1000,5000,20000" },
}, {
  usage: `Usage: deno run -A bench/deadlines.ts [--n N,N,...]

CPU per deadline when N deadlines share one timer (expiry one by one; churn of the earliest).`,
});

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

function expiry(n: number): number {
  const clock = new ManualClock(0);
  const deadlines = new Deadlines({ timers: clock, now: clock.now });
  // Inserted out of order, as sessions' credentials are: a fixed shuffle of 1..n ms.
  for (let i = 0; i < n; i++) deadlines.add(1 + ((i * 7919) % n), () => {});
  const t0 = cpuMs();
  for (let i = 0; i < n; i++) clock.advance(1);
  const spent = cpuMs() - t0;
  if (deadlines.size !== 0) throw new Error(`${deadlines.size} deadlines did not fire`);
  return spent;
}

function churn(n: number): number {
  const clock = new ManualClock(0);
  const deadlines = new Deadlines({ timers: clock, now: clock.now });
  const cancels: (() => void)[] = [];
  for (let i = 0; i < n; i++) cancels.push(deadlines.add(1000 + i, () => {}));
  const t0 = cpuMs();
  for (let i = 0; i < n; i++) {
    cancels[i]!(); // the earliest ends first
    cancels.push(deadlines.add(1000 + n + i, () => {}));
    clock.fireNext(); // the timer armed for the cancelled one fires and finds nothing due
  }
  const spent = cpuMs() - t0;
  if (deadlines.size !== n) throw new Error(`${deadlines.size} deadlines held, not ${n}`);
  return spent;
}

for (const n of v.n.split(",").map(Number)) {
  expiry(Math.min(n, 1000)); // warm up
  const e = expiry(n);
  const c = churn(n);
  console.log(
    `N ${n}: expiry ${e.toFixed(0)} ms CPU, ${(e * 1000 / n).toFixed(2)} µs per deadline; ` +
      `churn ${c.toFixed(0)} ms CPU, ${(c * 1000 / n).toFixed(2)} µs per deadline`,
  );
}
