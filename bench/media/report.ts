// How one configuration's figures are printed: delivery against what was offered,
// frame latency, and the sender's CPU per delivered byte against the raw sender's.
import type { Result } from "./measure.ts";
import { fps } from "./options.ts";

/** A header line for N subscribers. */
export function heading(n: number, frameSize: number, gop: number): string {
  const mbit = (frameSize * 8 * fps / 1e6).toFixed(2);
  return `\n${n} subscriber(s), one ${mbit} Mbit/s track: ${fps} frames/s of ${frameSize} B, ` +
    `groups of ${gop} frames`;
}

/** CPU ns per delivered byte. */
export function nsPerByte(r: Result): number {
  return r.cores * r.snap.seconds * 1e9 / Math.max(1, r.snap.bytes);
}

/** The report line of one configuration; `raw` is the same N's ceiling, when measured. */
export function formatResult(label: string, n: number, r: Result, raw?: Result): string {
  const s = r.snap;
  const rate = s.frames / s.seconds;
  const ratio = raw ? `  (${(nsPerByte(r) / nsPerByte(raw)).toFixed(2)}× raw)` : "";
  return `${label.padEnd(44)} frames/s ${rate.toFixed(0).padStart(6)} of ${n * fps}` +
    `  latency p50 ${s.p50.toFixed(1)} / p99 ${s.p99.toFixed(1)} / max ${s.max.toFixed(0)} ms` +
    (s.failed ? `  (${s.failed} sessions failed to start)` : "") +
    `\n    ${(s.bytes / s.seconds / 1e6).toFixed(1)} MB/s delivered; sender cores ${
      r.cores.toFixed(2)
    }, ${nsPerByte(r).toFixed(2)} ns CPU per delivered byte${ratio}; load average ${
      r.load.toFixed(1)
    }`;
}
