// Test helper: reads Prometheus text exposition with a real parser from npm.
import parse from "parse-prometheus-text-format";

/** One sample as the parser returns it. */
export interface Sample {
  value?: string;
  labels?: Record<string, string>;
  buckets?: Record<string, string>;
  sum?: string;
  count?: string;
}

/** One metric family as the parser returns it. */
export interface Family {
  name: string;
  help: string;
  type: string;
  metrics: Sample[];
}

/** Parses exposition text (throws on any invalid line) into families by name. */
export function families(text: string): Map<string, Family> {
  const parsed = parse(text) as Family[];
  return new Map(parsed.map((f) => [f.name, f]));
}

/**
 * The `_sum` and `_count` series of one histogram, with labels.
 *
 * parse-prometheus-text-format 1.1.1 drops the `_sum`/`_count` of labelled
 * histograms (it flattens every histogram into one unlabelled sample), so the
 * lines are fed back to the same parser as two gauge families.
 */
export function histogramSeries(
  text: string,
  name: string,
): { labels: Record<string, string>; sum: number; count: number }[] {
  const pick = (suffix: string): string[] =>
    text.split("\n").filter((l) =>
      l.startsWith(`${name}${suffix}{`) || l.startsWith(`${name}${suffix} `)
    );
  const sums = families(`# TYPE ${name}_sum gauge\n${pick("_sum").join("\n")}\n`).get(
    `${name}_sum`,
  );
  const counts = families(`# TYPE ${name}_count gauge\n${pick("_count").join("\n")}\n`).get(
    `${name}_count`,
  );
  return (sums?.metrics ?? []).map((s, i) => ({
    labels: s.labels ?? {},
    sum: Number(s.value),
    count: Number(counts?.metrics[i]?.value),
  }));
}

/** Value of the one sample of `name` whose labels equal `labels` (undefined when absent). */
export function sampleValue(
  fams: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const f = fams.get(name);
  const want = JSON.stringify(Object.entries(labels).sort());
  const m = f?.metrics.find((s) => JSON.stringify(Object.entries(s.labels ?? {}).sort()) === want);
  return m?.value === undefined ? undefined : Number(m.value);
}
