/** A rate limit: `rate` records per second refilling a bucket of `burst`. */
export interface RateLimit {
  /** Records per second. */
  readonly rate: number;
  /** Records at once. */
  readonly burst: number;
}

/**
 * Parses `RATE,BURST` (records per second, records at once). Throws
 * `TypeError` naming what is wrong.
 */
export function parseRateLimit(text: string): RateLimit {
  const m = /^\s*([0-9]*\.?[0-9]+)\s*,\s*([0-9]+)\s*$/.exec(text);
  if (!m) throw new TypeError(`"${text}" is not RATE,BURST (for example 10,20)`);
  const rate = Number(m[1]);
  const burst = Number(m[2]);
  if (!(rate > 0)) throw new TypeError(`"${text}": RATE must be above 0`);
  if (!(burst >= 1)) throw new TypeError(`"${text}": BURST must be at least 1`);
  return { rate, burst };
}
