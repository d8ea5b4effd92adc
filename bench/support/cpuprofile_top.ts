/**
 * Where a `.cpuprofile` (V8 CPU profile JSON, as the relay's
 * /debug/pprof/profile answers) spent its time: the functions with the most
 * self time, and the source files they live in.
 *
 *   deno run --allow-read bench/support/cpuprofile_top.ts relay.cpuprofile [--top 25]
 */
import { benchArgs } from "./args.ts";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
  };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Self time in µs per key, from the samples (each sample's delta goes to the node it hit). */
export function selfTimes(
  profile: CpuProfile,
  keyOf: (node: ProfileNode) => string,
): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (!node) return;
    const key = keyOf(node);
    totals.set(key, (totals.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return totals;
}

/** A frame as `name (file:line)`, the file shortened to what follows src/ or node_modules/. */
export function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || "(anonymous)";
  if (!url) return name;
  return `${name} (${shortFile(url)}:${lineNumber + 1})`;
}

function shortFile(url: string): string {
  const m = /\/(src|node_modules|ext)\/(.*)$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : url.replace(/^.*\//, "");
}

function print(title: string, totals: Map<string, number>, all: number, top: number): void {
  console.log(`\n${title}`);
  const rows = [...totals].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [key, us] of rows) {
    console.log(
      `${(100 * us / all).toFixed(1).padStart(6)}%  ${
        (us / 1000).toFixed(0).padStart(7)
      } ms  ${key}`,
    );
  }
}

if (import.meta.main) {
  const { values, positionals } = benchArgs({ top: { type: "string", default: "25" } }, {
    allowPositionals: true,
  });
  const top = Number(values.top);
  for (const file of positionals) {
    const profile = JSON.parse(await Deno.readTextFile(file)) as CpuProfile;
    const byFrame = selfTimes(profile, frameName);
    const all = [...byFrame.values()].reduce((a, b) => a + b, 0);
    console.log(`${file}: ${(all / 1000).toFixed(0)} ms sampled`);
    print("self time by function", byFrame, all, top);
    print(
      "self time by file",
      selfTimes(
        profile,
        (n) => n.callFrame.url ? shortFile(n.callFrame.url) : n.callFrame.functionName,
      ),
      all,
      top,
    );
  }
}
