/** Label names and values of one series, in the metric's declared label order. */
export type Labels = Readonly<Record<string, string>>;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Throws a TypeError unless `name` is a valid Prometheus metric name. */
export function checkMetricName(name: string): void {
  if (!NAME.test(name)) throw new TypeError(`Invalid metric name "${name}"`);
}

/** Throws a TypeError unless every label name is valid, not reserved and not repeated. */
export function checkLabelNames(metric: string, names: readonly string[]): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (!LABEL.test(n) || n.startsWith("__")) {
      throw new TypeError(`Invalid label name "${n}" on metric "${metric}"`);
    }
    if (n === "le") throw new TypeError(`Label name "le" is reserved on metric "${metric}"`);
    if (seen.has(n)) throw new TypeError(`Label "${n}" repeated on metric "${metric}"`);
    seen.add(n);
  }
}

/**
 * Turns a label object into the series key, refusing labels outside the
 * metric's fixed set so no caller can add an unbounded dimension by accident.
 */
export function seriesKey(metric: string, names: readonly string[], labels: Labels): string {
  const keys = Object.keys(labels);
  if (keys.length !== names.length) {
    throw new TypeError(
      `Metric "${metric}" takes labels [${names.join(", ")}], got [${keys.join(", ")}]`,
    );
  }
  const values: string[] = [];
  for (const n of names) {
    const v = labels[n];
    if (typeof v !== "string") {
      throw new TypeError(
        `Metric "${metric}" takes labels [${names.join(", ")}], got [${keys.join(", ")}]`,
      );
    }
    values.push(v);
  }
  return JSON.stringify(values);
}

/** Escapes a label value for the text exposition format. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

/** Escapes HELP text for the text exposition format. */
export function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/** Renders `{a="x",b="y"}` (or nothing for no labels) from names and the series key. */
export function renderLabels(
  names: readonly string[],
  values: readonly string[],
  extra?: readonly [string, string],
): string {
  const parts = names.map((n, i) => `${n}="${escapeLabelValue(values[i] ?? "")}"`);
  if (extra) parts.push(`${extra[0]}="${escapeLabelValue(extra[1])}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/** Formats a sample value the way Prometheus parsers expect. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}
