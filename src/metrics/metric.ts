import {
  checkLabelNames,
  checkMetricName,
  escapeHelp,
  formatValue,
  type Labels,
  renderLabels,
  seriesKey,
} from "./labels.ts";

/** What every metric kind declares. */
export interface MetricOptions {
  /** Full metric name, e.g. `sluice_relay_sessions_active`. */
  readonly name: string;
  /** One-line HELP text. */
  readonly help: string;
  /** The fixed label names; every series carries exactly these. */
  readonly labels?: readonly string[];
  /**
   * Most series the metric holds (default unbounded). Beyond it a new
   * series is not made: its updates are dropped and `onOverflow` is told,
   * so label values from outside input cannot grow the metric without end.
   */
  readonly maxSeries?: number;
  /** Called each time an update is dropped because the metric holds `maxSeries` series. */
  readonly onOverflow?: (metric: string) => void;
}

/** A metric the registry can render. */
export interface Metric {
  /** Metric name. */
  readonly name: string;
  /** Appends the HELP, TYPE and sample lines to `out`. */
  render(out: string[]): void;
}

abstract class Base<S> implements Metric {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  protected readonly series = new Map<string, S>();
  abstract readonly type: string;
  readonly #maxSeries: number;
  readonly #onOverflow: ((metric: string) => void) | undefined;

  constructor(options: MetricOptions) {
    checkMetricName(options.name);
    this.labelNames = options.labels ?? [];
    checkLabelNames(options.name, this.labelNames);
    this.name = options.name;
    this.help = options.help;
    this.#maxSeries = options.maxSeries ?? Infinity;
    this.#onOverflow = options.onOverflow;
  }

  /** Number of series held now. */
  get size(): number {
    return this.series.size;
  }

  /** True when the series of `labels` exists. */
  has(labels: Labels): boolean {
    return this.series.has(seriesKey(this.name, this.labelNames, labels));
  }

  // A new series, kept when there is room; past the bound a detached cell whose updates vanish.
  #make(key: string, make: () => S): S {
    const s = make();
    if (this.series.size < this.#maxSeries) this.series.set(key, s);
    else this.#onOverflow?.(this.name);
    return s;
  }

  protected get(labels: Labels, make: () => S): S {
    const key = seriesKey(this.name, this.labelNames, labels);
    return this.series.get(key) ?? this.#make(key, make);
  }

  /**
   * The cell of one series, looked up by its key once made (`key`), for hot
   * paths that update the same series many times a second.
   */
  protected bound(labels: Labels, make: () => S): () => S {
    const key = seriesKey(this.name, this.labelNames, labels);
    let cell: S | undefined;
    return () => {
      // Checked every time: clear() or remove() may have dropped the series.
      if (cell === undefined || this.series.get(key) !== cell) {
        cell = this.series.get(key) ?? this.#make(key, make);
      }
      return cell;
    };
  }

  /** Drops one series (e.g. a per-session gauge when its session ends). */
  remove(labels: Labels): void {
    this.series.delete(seriesKey(this.name, this.labelNames, labels));
  }

  /** Drops every series. */
  clear(): void {
    this.series.clear();
  }

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`);
    out.push(`# TYPE ${this.name} ${this.type}`);
    if (this.labelNames.length === 0 && this.series.size === 0) this.renderEmpty(out);
    for (const [key, s] of this.series) {
      this.renderSeries(out, JSON.parse(key) as string[], s);
    }
  }

  protected abstract renderSeries(out: string[], values: string[], s: S): void;
  protected abstract renderEmpty(out: string[]): void;
}

interface Cell {
  v: number;
}

/** A metric whose series are single numbers (counters and gauges). */
abstract class SingleValue extends Base<Cell> {
  /** Current value of one series (0 when absent). */
  value(labels: Labels = {}): number {
    return this.series.get(seriesKey(this.name, this.labelNames, labels))?.v ?? 0;
  }

  protected renderSeries(out: string[], values: string[], s: Cell): void {
    out.push(`${this.name}${renderLabels(this.labelNames, values)} ${formatValue(s.v)}`);
  }

  protected renderEmpty(out: string[]): void {
    out.push(`${this.name} 0`);
  }
}

/** A monotonically increasing count. */
export class Counter extends SingleValue {
  readonly type = "counter";

  /** Adds `n` (default 1) to the series; negative amounts are a RangeError. */
  inc(labels: Labels = {}, n = 1): void {
    if (!(n >= 0)) throw new RangeError(`Counter "${this.name}" cannot add ${n}`);
    this.get(labels, () => ({ v: 0 })).v += n;
  }

  /** One series, for a caller that adds to it many times a second: `inc(n)` as above. */
  bind(labels: Labels): (n?: number) => void {
    const cell = this.bound(labels, () => ({ v: 0 }));
    return (n = 1) => {
      if (!(n >= 0)) throw new RangeError(`Counter "${this.name}" cannot add ${n}`);
      cell().v += n;
    };
  }
}

/** A value that goes up and down. */
export class Gauge extends SingleValue {
  readonly type = "gauge";

  /** Sets the series to `v`. */
  set(labels: Labels, v: number): void {
    this.get(labels, () => ({ v: 0 })).v = v;
  }

  /** Adds `n` (may be negative) to the series. */
  add(labels: Labels, n: number): void {
    this.get(labels, () => ({ v: 0 })).v += n;
  }
}

/** Histogram options: the upper bounds of the buckets, ascending (+Inf is implied). */
export interface HistogramOptions extends MetricOptions {
  /** Upper bounds, strictly ascending, finite. */
  readonly buckets: readonly number[];
}

interface HistCell {
  counts: number[];
  sum: number;
  count: number;
}

/** Default latency buckets in seconds. */
export const DEFAULT_SECONDS_BUCKETS: readonly number[] = [
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

/** A distribution of observations in fixed buckets, with _sum and _count. */
export class Histogram extends Base<HistCell> {
  readonly type = "histogram";
  readonly buckets: readonly number[];

  constructor(options: HistogramOptions) {
    super(options);
    const b = options.buckets;
    for (let i = 0; i < b.length; i++) {
      const x = b[i]!;
      if (!Number.isFinite(x) || (i > 0 && x <= b[i - 1]!)) {
        throw new RangeError(`Histogram "${options.name}" buckets must be finite and ascending`);
      }
    }
    this.buckets = [...b];
  }

  /** Records one observation. */
  observe(labels: Labels, v: number): void {
    const c = this.get(labels, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    for (let i = 0; i < this.buckets.length; i++) {
      if (v <= this.buckets[i]!) c.counts[i]!++;
    }
    c.sum += v;
    c.count++;
  }

  /** One series, for a caller that observes into it many times a second: `observe(v)` as above. */
  bind(labels: Labels): (v: number) => void {
    const cell = this.bound(labels, () => ({
      counts: this.buckets.map(() => 0),
      sum: 0,
      count: 0,
    }));
    const buckets = this.buckets;
    return (v) => {
      const c = cell();
      for (let i = 0; i < buckets.length; i++) if (v <= buckets[i]!) c.counts[i]!++;
      c.sum += v;
      c.count++;
    };
  }

  /** Count and sum of one series (zeros when absent). */
  snapshot(labels: Labels = {}): { count: number; sum: number } {
    const c = this.series.get(seriesKey(this.name, this.labelNames, labels));
    return { count: c?.count ?? 0, sum: c?.sum ?? 0 };
  }

  protected renderSeries(out: string[], values: string[], c: HistCell): void {
    const n = this.name;
    for (let i = 0; i < this.buckets.length; i++) {
      const le = formatValue(this.buckets[i]!);
      out.push(`${n}_bucket${renderLabels(this.labelNames, values, ["le", le])} ${c.counts[i]}`);
    }
    out.push(`${n}_bucket${renderLabels(this.labelNames, values, ["le", "+Inf"])} ${c.count}`);
    out.push(`${n}_sum${renderLabels(this.labelNames, values)} ${formatValue(c.sum)}`);
    out.push(`${n}_count${renderLabels(this.labelNames, values)} ${c.count}`);
  }

  protected renderEmpty(out: string[]): void {
    this.renderSeries(out, [], { counts: this.buckets.map(() => 0), sum: 0, count: 0 });
  }
}
