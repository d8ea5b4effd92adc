/** Fixed-resolution latency histogram: 0.1 ms buckets up to 10 s, then one overflow bucket. */
export class LatencyHistogram {
  /** Bucket counts; index i holds [i/10, (i+1)/10) ms. */
  readonly counts: Uint32Array<ArrayBuffer>;

  /** Creates an empty histogram (or wraps transferred counts). */
  constructor(counts?: Uint32Array<ArrayBuffer>) {
    this.counts = counts ?? new Uint32Array(100_001);
  }

  /** Records one latency in ms. */
  record(ms: number): void {
    const i = Math.min(this.counts.length - 1, Math.max(0, Math.floor(ms * 10)));
    this.counts[i]!++;
  }

  /** Adds another histogram's counts. */
  merge(other: Uint32Array): void {
    for (let i = 0; i < other.length; i++) this.counts[i]! += other[i]!;
  }

  /** Number of samples. */
  get total(): number {
    let n = 0;
    for (const c of this.counts) n += c;
    return n;
  }

  /** Samples by whole seconds: index s counts [s, s+1) s; the last (10) counts 10 s or more. */
  bySecond(): number[] {
    const out = new Array<number>(11).fill(0);
    for (let i = 0; i < this.counts.length; i++) {
      out[Math.min(10, Math.floor(i / 10_000))]! += this.counts[i]!;
    }
    return out;
  }

  /** The `q` quantile (0..1) in ms (upper bucket edge), or NaN when empty. */
  quantile(q: number): number {
    const total = this.total;
    if (total === 0) return NaN;
    const rank = Math.ceil(q * total);
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return (i + 1) / 10;
    }
    return Infinity;
  }
}
