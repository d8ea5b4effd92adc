/**
 * Calls `write` `rate` times a second, in ticks of `tick` ms: at 1 ms the
 * groups arrive almost one by one, at 10 ms in bursts of a tick's worth.
 * Returns what stops it.
 */
export function pace(rate: number, tick: number, write: () => void): () => void {
  const t0 = performance.now();
  let done = 0;
  const id = setInterval(() => {
    const due = Math.floor((performance.now() - t0) * rate / 1000);
    for (; done < due; done++) write();
  }, tick);
  return () => clearInterval(id);
}
