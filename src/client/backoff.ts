/** The client's retry delays: reconnects, renewals and POST retries. */
import { Backoff } from "../timers/mod.ts";

/** 250 ms doubling up to 2 s, each ±20%. */
export function retryBackoff(): Backoff {
  return new Backoff({ baseMs: 250, capMs: 2_000, jitter: 0.2 });
}
