/**
 * Where a `.heapsnapshot` (the relay's /debug/pprof/heap, or the load
 * generator's `--heap`) keeps its bytes: self size and count per
 * constructor name, largest first.
 *
 *   deno run --allow-read bench/support/heapsnapshot_top.ts relay.heapsnapshot [--top 30]
 */
import { benchArgs } from "./args.ts";

interface HeapSnapshot {
  readonly snapshot: {
    readonly meta: {
      readonly node_fields: readonly string[];
      readonly node_types: readonly [readonly string[], ...unknown[]];
    };
  };
  readonly nodes: readonly number[];
  readonly strings: readonly string[];
}

/** Self size and count per `type:name` of the snapshot's nodes. */
export function sizesByName(h: HeapSnapshot): Map<string, { bytes: number; count: number }> {
  const fields = h.snapshot.meta.node_fields;
  const types = h.snapshot.meta.node_types[0];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const totals = new Map<string, { bytes: number; count: number }>();
  for (let i = 0; i < h.nodes.length; i += width) {
    const type = types[h.nodes[i + typeAt!]!] ?? "?";
    const name = type === "object" || type === "closure"
      ? h.strings[h.nodes[i + nameAt!]!] ?? "?"
      : `(${type})`;
    const key = type === "closure" ? `closure ${name}` : name;
    const t = totals.get(key) ?? { bytes: 0, count: 0 };
    t.bytes += h.nodes[i + sizeAt!]!;
    t.count++;
    totals.set(key, t);
  }
  return totals;
}

if (import.meta.main) {
  const { values, positionals } = benchArgs({ top: { type: "string", default: "30" } }, {
    allowPositionals: true,
  });
  for (const file of positionals) {
    const totals = sizesByName(JSON.parse(await Deno.readTextFile(file)) as HeapSnapshot);
    const all = [...totals.values()].reduce((a, b) => a + b.bytes, 0);
    console.log(`${file}: ${(all / 1024 / 1024).toFixed(1)} MiB self size`);
    for (
      const [name, t] of [...totals].sort((a, b) => b[1].bytes - a[1].bytes).slice(
        0,
        Number(values.top),
      )
    ) {
      console.log(
        `${(t.bytes / 1024).toFixed(0).padStart(9)} KiB ${String(t.count).padStart(8)}  ${name}`,
      );
    }
  }
}
