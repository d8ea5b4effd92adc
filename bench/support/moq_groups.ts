/**
 * The moq-lite measurements the transport benchmarks share: one side
 * publishes `count` one-frame groups of `size` bytes (the server unless
 * told otherwise), the other subscribes, and the writer keeps at most
 * `window` groups unread.
 */
import { accept, connect, type MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import type { Session } from "../../src/transport/mod.ts";
import { LatencyHistogram } from "./loadgen/latency.ts";
import { sleep } from "../../src/timers/mod.ts";

/** Result of one measured run. */
export interface Figures {
  /** Messages per second. */
  readonly perSecond: number;
  /** Payload megabytes (10^6) per second. */
  readonly mbPerSecond: number;
}

/** Which end of the session pair publishes. */
export type Publisher = "server" | "client";

/** moq sessions on both ends; `publisher` serves `track`. */
async function moqPair(
  client: Session,
  server: Session,
  publisher: Publisher,
  track: TrackProducer,
  queue: number,
): Promise<{ pub: MoqSession; sub: MoqSession }> {
  const serving = { serve: () => track, maxGroupQueue: queue };
  const plain = { maxGroupQueue: queue };
  const serverP = accept(server, publisher === "server" ? serving : plain);
  const c = await connect(client, publisher === "client" ? serving : plain);
  const s = await serverP;
  return publisher === "server" ? { pub: s, sub: c } : { pub: c, sub: s };
}

/** Runs the group loop over an already connected session pair; closes both moq sessions. */
export async function moqGroups(
  client: Session,
  server: Session,
  count: number,
  size: number,
  window: number,
  publisher: Publisher = "server",
): Promise<Figures> {
  const track = new TrackProducer({ cache: window * 2 });
  const { pub, sub } = await moqPair(client, server, publisher, track, window * 2);
  const payload = new Uint8Array(size).fill(7);
  track.writeGroup(0, payload);
  const it = sub.subscribe("bench", "data")[Symbol.asyncIterator]();
  await it.next(); // group 0: the subscription is live
  let received = 0;
  let wake: (() => void) | undefined;
  const reader = (async () => {
    while (received < count) {
      const r = await it.next();
      if (r.done) break;
      if (r.value.frames[0]?.length !== size) throw new Error("short group");
      received++;
      wake?.();
    }
  })();
  const start = performance.now();
  for (let seq = 1; seq <= count; seq++) {
    while (seq - 1 - received >= window) await new Promise<void>((r) => (wake = r));
    track.writeGroup(seq, payload);
  }
  await reader;
  const seconds = (performance.now() - start) / 1000;
  if (pub.stats.groupsSkipped > 0 || received !== count) {
    throw new Error(`groups skipped: ${pub.stats.groupsSkipped}, received ${received}`);
  }
  await it.return?.();
  client.close(0, "");
  server.close(0, "");
  return { perSecond: count / seconds, mbPerSecond: count * size / seconds / 1e6 };
}

/** Delivery latency quantiles of one paced run, in ms. */
export interface Latency {
  readonly p50: number;
  readonly p99: number;
}

/**
 * Delivery latency: the server publishes `count` one-frame groups of `size`
 * bytes, one every `intervalMs`, each stamped with its send time; the
 * client records when each arrives (same process, same clock).
 */
export async function moqLatency(
  client: Session,
  server: Session,
  count: number,
  size: number,
  intervalMs: number,
  publisher: Publisher = "server",
): Promise<Latency> {
  const track = new TrackProducer({ cache: 8 });
  const { sub } = await moqPair(client, server, publisher, track, 64);
  const stamped = () => {
    const payload = new Uint8Array(Math.max(size, 8));
    new DataView(payload.buffer).setFloat64(0, performance.now());
    return payload;
  };
  track.writeGroup(0, stamped());
  const it = sub.subscribe("bench", "data")[Symbol.asyncIterator]();
  await it.next(); // group 0: the subscription is live
  const histogram = new LatencyHistogram();
  const reader = (async () => {
    for (let n = 0; n < count; n++) {
      const r = await it.next();
      if (r.done) break;
      const frame = r.value.frames[0]!;
      histogram.record(
        performance.now() - new DataView(frame.buffer, frame.byteOffset).getFloat64(0),
      );
    }
  })();
  for (let seq = 1; seq <= count; seq++) {
    track.writeGroup(seq, stamped());
    await sleep(intervalMs);
  }
  await reader;
  await it.return?.();
  client.close(0, "");
  server.close(0, "");
  return { p50: histogram.quantile(0.5), p99: histogram.quantile(0.99) };
}
