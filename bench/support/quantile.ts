/** The nearest-rank `q` quantile (0..1) of `sorted` (ascending); NaN when it is empty. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** {@linkcode quantile} to one decimal: latencies in ms, reported to a tenth. */
export function quantileTenth(sorted: readonly number[], q: number): number {
  return Math.round(quantile(sorted, q) * 10) / 10;
}
