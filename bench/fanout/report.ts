// How one run's figures are printed: groups/s and the ratio to raw, the cores each process
// kept busy, UDP datagrams per group and, with --overload, the spread over sessions.
import { quantileOf, type Result } from "./measure.ts";

/** The report lines of one run, `raw` being the ceiling's groups/s. */
export function formatResult(label: string, r: Result, raw: number, overload: boolean): string {
  let line = `${label.padEnd(34)} ${r.perSecond.toFixed(0).padStart(8)} groups/s  ratio ${
    (r.perSecond / raw).toFixed(2)
  }`;
  if (r.failed) line += `  (${r.failed} sessions failed to start)`;
  // On a machine where senders and receivers share the cores, a sender that
  // costs more per group also leaves the receivers less: CPU shows which.
  const c = r.cpu;
  line += `\n    cores busy: sender ${c.sender.toFixed(2)}, receivers ${c.receivers.toFixed(2)}` +
    (Number.isNaN(c.late) ? "" : `, late receivers ${c.late.toFixed(2)}`) +
    `, this process ${c.bench.toFixed(2)}; sender ${
      (c.sender * 1e6 / Math.max(r.perSecond, 1)).toFixed(1)
    } µs CPU per group delivered`;
  const groups = r.perSecond * r.seconds;
  line +=
    `\n    UDP: ${(r.udp.sent / Math.max(groups, 1)).toFixed(2)} datagrams per group delivered, ` +
    `${r.udp.dropped} dropped for a full receive buffer`;
  if (overload) line += overloadLines(r);
  return line;
}

// Each session's delivered rate, the skips and how late sessions fared.
function overloadLines(r: Result): string {
  const median = quantileOf(r.sessions, 0.5);
  const min = Math.min(...r.sessions);
  const skipTotal = r.skips.reduce((a, b) => a + b, 0);
  let line = `\n    per session groups/s min ${min.toFixed(0)} / median ${
    median.toFixed(0)
  } / max ${Math.max(...r.sessions).toFixed(0)} (median/min ${
    min > 0 ? (median / min).toFixed(1) : "∞: a session got nothing"
  })`;
  if (skipTotal > 0) {
    line += `; skips ${skipTotal}, per session min ${Math.min(...r.skips)} / median ${
      quantileOf(r.skips, 0.5)
    } / max ${Math.max(...r.skips)}`;
  }
  if (r.late.length > 0) {
    const done = r.late.filter((t) => t >= 0);
    line += `\n    sessions connecting during the run: ${done.length}/${r.late.length} set up ` +
      `within 10 s of the window's end` +
      (done.length
        ? `, setup p50 ${quantileOf(done, 0.5).toFixed(0)} ms max ${
          Math.max(...done).toFixed(0)
        } ms`
        : "");
  }
  return line;
}
