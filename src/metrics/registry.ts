import {
  Counter,
  Gauge,
  Histogram,
  type HistogramOptions,
  type Metric,
  type MetricOptions,
} from "./metric.ts";

/** The media type of the Prometheus text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * A set of metrics rendered together in the Prometheus text format.
 *
 * @example
 * ```ts
 * const r = new Registry();
 * const c = r.counter({ name: "x_total", help: "Things", labels: ["kind"] });
 * c.inc({ kind: "a" });
 * r.render(); // "# HELP x_total Things\n# TYPE x_total counter\nx_total{kind=\"a\"} 1\n"
 * ```
 */
export class Registry {
  readonly #metrics = new Map<string, Metric>();
  readonly #collectors: (() => void)[] = [];

  #add<M extends Metric>(m: M): M {
    if (this.#metrics.has(m.name)) throw new TypeError(`Metric "${m.name}" already registered`);
    this.#metrics.set(m.name, m);
    return m;
  }

  /** Registers a counter. */
  counter(options: MetricOptions): Counter {
    return this.#add(new Counter(options));
  }

  /** Registers a gauge. */
  gauge(options: MetricOptions): Gauge {
    return this.#add(new Gauge(options));
  }

  /** Registers a histogram. */
  histogram(options: HistogramOptions): Histogram {
    return this.#add(new Histogram(options));
  }

  /** Runs `fn` before each render, to refresh gauges computed from live state. */
  onCollect(fn: () => void): void {
    this.#collectors.push(fn);
  }

  /** Names of the registered metrics, in registration order. */
  names(): string[] {
    return [...this.#metrics.keys()];
  }

  /** Renders every metric as Prometheus text exposition (ends with a newline). */
  render(): string {
    return [...this.renderEach()].join("");
  }

  /**
   * The same text metric by metric, for a streamed response: the collectors
   * run when the first piece is taken.
   */
  *renderEach(): Generator<string> {
    for (const fn of this.#collectors) fn();
    for (const m of this.#metrics.values()) {
      const lines: string[] = [];
      m.render(lines);
      if (lines.length > 0) yield lines.join("\n") + "\n";
    }
  }
}
