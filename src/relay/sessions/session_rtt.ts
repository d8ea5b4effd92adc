import type { MoqPeer } from "../../moq/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";

/** The reserved broadcast the RTT ping asks for; no publisher ever has it. */
export const RTT_PING_PATH = ".sluice/rtt-ping";

/**
 * One RTT sample of a moq session: the time from a SUBSCRIBE for a
 * broadcast the peer cannot have to the peer's refusal (one round trip plus
 * the peer's handling). Deno exposes no QUIC statistics, so this is the
 * relay's session RTT. Undefined when the peer did not answer in time.
 */
export async function pingRtt(
  moq: MoqPeer,
  now: () => number,
  timeoutMs = 5000,
  timers: Timers = systemTimers,
): Promise<number | undefined> {
  if (moq.isClosed) return undefined;
  const started = now();
  const sub = moq.subscribe(RTT_PING_PATH, "ping");
  let timer: unknown;
  try {
    const answered = await Promise.race([
      sub.ready.then(() => true, () => true),
      new Promise<false>((r) => (timer = timers.setTimeout(() => r(false), timeoutMs))),
    ]);
    return answered && !moq.isClosed ? now() - started : undefined;
  } finally {
    if (timer !== undefined) timers.clearTimeout(timer);
    sub.close();
  }
}

/** Smoothed RTT as QUIC computes it (RFC 9002: srtt = 7/8 srtt + 1/8 sample). */
export function smoothRtt(previous: number | undefined, sample: number): number {
  return previous === undefined ? sample : previous * 7 / 8 + sample / 8;
}

/**
 * The first RTT of a fresh session, for route election: the smaller of two
 * pings, since the very first request on a session also pays for opening
 * streams and warming code paths. Undefined when the peer did not answer.
 */
export async function firstRtt(
  moq: MoqPeer,
  now: () => number,
  timers: Timers = systemTimers,
): Promise<number | undefined> {
  const a = await pingRtt(moq, now, undefined, timers);
  if (a === undefined) return undefined;
  const b = await pingRtt(moq, now, undefined, timers);
  return b === undefined ? a : Math.min(a, b);
}

/**
 * Pings `moq` every `everyMs` (the first after `firstMs`) and hands each
 * sample to `onSample`; returns the function that stops it. A ping that
 * fails (the session is ending) just yields no sample.
 */
export function startPing(
  moq: MoqPeer,
  everyMs: number,
  firstMs: number,
  now: () => number,
  onSample: (ms: number) => void,
  timers: Timers = systemTimers,
): () => void {
  let timer: unknown;
  let stopped = false;
  const tick = async () => {
    const sample = await pingRtt(moq, now, undefined, timers).catch(() => undefined);
    if (stopped) return;
    if (sample !== undefined) onSample(sample);
    timer = timers.setTimeout(tick, everyMs);
  };
  timer = timers.setTimeout(tick, firstMs);
  return () => {
    stopped = true;
    if (timer !== undefined) timers.clearTimeout(timer);
  };
}
