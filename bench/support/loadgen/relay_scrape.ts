// The relay's own view of a run, read from its /metrics endpoint.

/** Counters read from one scrape of the relay's /metrics. */
export interface RelayScrape {
  /** Cumulative delivery-histogram counts by upper bound in seconds, summed over tracks. */
  buckets: Map<number, number>;
  /** subscriber_skips_total. */
  skips: number;
}

/** Reads the relay's delivery histogram (summed over tracks) and skip counter. */
export async function scrape(port: number, client: Deno.HttpClient): Promise<RelayScrape> {
  const text = await (await fetch(`https://localhost:${port}/metrics`, { client })).text();
  const buckets = new Map<number, number>();
  let skips = 0;
  for (const line of text.split("\n")) {
    const b = /^sluice_relay_group_delivery_seconds_bucket\{.*le="([^"]+)"\} (\S+)$/.exec(line);
    if (b) {
      const le = b[1] === "+Inf" ? Infinity : Number(b[1]);
      buckets.set(le, (buckets.get(le) ?? 0) + Number(b[2]));
    }
    const s = /^sluice_relay_subscriber_skips_total (\S+)$/.exec(line);
    if (s) skips = Number(s[1]);
  }
  return { buckets, skips };
}

/** Quantile (upper bucket bound, ms) of the histogram difference `b - a`. */
export function bucketQuantile(
  a: RelayScrape,
  b: RelayScrape,
  q: number,
): { v: number; count: number } {
  const les = [...b.buckets.keys()].sort((x, y) => x - y);
  const diff = les.map((le) => (b.buckets.get(le) ?? 0) - (a.buckets.get(le) ?? 0));
  const count = diff.at(-1) ?? 0;
  if (count === 0) return { v: NaN, count };
  const rank = q * count;
  const i = diff.findIndex((c) => c >= rank);
  return { v: les[i]! * 1000, count };
}
