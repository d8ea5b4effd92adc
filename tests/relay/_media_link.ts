// Media tracks through a relay to one subscriber session on a slow link, for
// the priority tests: a publisher of ours writes stamped frames on timers
// into a relay, a UDP proxy with a bottleneck stands between the relay and the
// subscriber, and each frame is timed as the subscriber (ours or @moq/net's)
// reads it.
import * as Net from "@moq/net";
import { LiveFrames, type MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import { stampedFrame, wallMs } from "../../bench/media/frames.ts";
import { quantile } from "../../bench/support/quantile.ts";
import { dialNet, dialOurs, seeAnnounced } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { type LinkShape, startUdpProxy, type UdpProxy } from "../support/udp_proxy.ts";

/** The broadcast every track belongs to. */
export const PATH = "live/show";

/**
 * The relay → subscriber direction: 150 kB/s (1.2 Mbit/s), below one
 * 2.5 Mbit/s video track alone, behind a 16 KiB queue (about 110 ms at that
 * rate), 20 ms each way.
 */
export const SLOW_LINK: LinkShape = { rateBytesPerSecond: 150_000, delayMs: 20 };

/** A track the publisher writes: `frame`-byte frames every `everyMs`, `gop` frames a group. */
export interface TrackPlan {
  readonly name: string;
  readonly frame: number;
  readonly everyMs: number;
  /** Frames per group: 1 writes each group whole; more write it frame by frame. */
  readonly gop: number;
}

/** A frame read: its group, when it was written and when it was read (wall-clock ms). */
export interface Arrival {
  readonly group: number;
  readonly sentAt: number;
  readonly at: number;
}

/** One track's frames: the write time of each, and each arrival. */
export class Frames {
  readonly sent: number[] = [];
  readonly arrivals: Arrival[] = [];

  /** Frames written in `[from, to)`. */
  sentIn(from: number, to: number): number {
    return this.sent.filter((t) => t >= from && t < to).length;
  }

  /** Arrivals of frames written in `[from, to)`. */
  of(from: number, to: number): Arrival[] {
    return this.arrivals.filter((a) => a.sentAt >= from && a.sentAt < to);
  }

  /** Arrivals (of any frame) read in `[from, to)`. */
  readIn(from: number, to: number): number {
    return this.arrivals.filter((a) => a.at >= from && a.at < to).length;
  }

  /** Of `arrivals`, those of a group older than one a frame was read of before. */
  stale(arrivals: readonly Arrival[]): number {
    let newest = -1;
    let stale = 0;
    for (const a of [...arrivals].sort((x, y) => x.at - y.at)) {
      if (a.group < newest) stale++;
      newest = Math.max(newest, a.group);
    }
    return stale;
  }
}

/** Latency quantiles of `arrivals`, ms (NaN when none). */
export function latency(arrivals: readonly Arrival[]): { p50: number; p90: number; max: number } {
  const sorted = arrivals.map((a) => a.at - a.sentAt).sort((a, b) => a - b);
  const q = (p: number) => Math.round(quantile(sorted, p));
  return { p50: q(0.5), p90: q(0.9), max: q(1) };
}

/** A subscriber session reading every frame of its tracks as it arrives. */
export interface MediaSubscriber {
  /** Changes a track's priority (SUBSCRIBE_UPDATE). */
  update(track: string, priority: number): Promise<void>;
  close(): void;
}

/** Dials `port` and subscribes to each track at its priority, calling `onFrame` per frame read. */
export type SubscriberKind = (
  port: number,
  priorities: Readonly<Record<string, number>>,
  onFrame: (track: string, frame: Uint8Array) => void,
) => Promise<MediaSubscriber>;

/** Our subscriber: groups handed over at their first frame (`partial`), frames read as they come. */
export async function ours(
  port: number,
  priorities: Readonly<Record<string, number>>,
  onFrame: (track: string, frame: Uint8Array) => void,
): Promise<MediaSubscriber> {
  const moq: MoqSession = await dialOurs(port);
  await seeAnnounced(moq, PATH);
  const subs = new Map(
    Object.entries(priorities).map(([track, priority]) => {
      // A queue as long as the test (shipped 16): what is measured is the link, not how fast
      // the test reads.
      const sub = moq.subscribe(PATH, track, { priority, partial: true, queueLimit: 4096 });
      void (async () => {
        try {
          for await (const g of sub) {
            void (async () => {
              let read = 0;
              for (;;) {
                while (read < g.frames.length) onFrame(track, g.frames[read++]!);
                if (g.live?.state !== "open") return;
                await g.live.changed();
              }
            })();
          }
        } catch {
          // The session closed at the end of the test.
        }
      })();
      return [track, sub] as const;
    }),
  );
  return {
    update: (track, priority) => subs.get(track)!.update({ priority }),
    close: () => {
      for (const sub of subs.values()) sub.close();
      moq.close(0, "done");
    },
  };
}

/** @moq/net's subscriber: every group as it comes, each read frame by frame. */
export async function net(
  port: number,
  priorities: Readonly<Record<string, number>>,
  onFrame: (track: string, frame: Uint8Array) => void,
): Promise<MediaSubscriber> {
  const conn = await dialNet(port);
  const broadcast = conn.consume(Net.Path.from(PATH));
  const subs = new Map(
    Object.entries(priorities).map(([track, priority]) => {
      const sub = broadcast.track(track).subscribe({ priority });
      void (async () => {
        for (;;) {
          const g = await sub.recvGroup().catch(() => undefined);
          if (!g) return;
          void (async () => {
            for (;;) {
              const f = await g.readFrame().catch(() => undefined);
              if (!f) return;
              onFrame(track, f.payload);
            }
          })();
        }
      })();
      return [track, sub] as const;
    }),
  );
  return {
    update: (track, priority) => Promise.resolve(subs.get(track)!.update({ priority })),
    close: () => conn.close(),
  };
}

/** What a test gets while the tracks flow: the link, each track's frames, its subscriber. */
export interface MediaLink {
  readonly proxy: UdpProxy;
  readonly frames: ReadonlyMap<string, Frames>;
  readonly subscriber: MediaSubscriber;
}

/**
 * Runs `plans` through a fresh relay to one subscriber of `kind` behind the
 * slow link, subscribed at `priorities`; `run` starts once a first frame of
 * each track of `ready` (default: every track) arrived, and everything stops
 * when it returns.
 */
export async function overSlowLink<T>(
  plans: readonly TrackPlan[],
  kind: SubscriberKind,
  priorities: Readonly<Record<string, number>>,
  run: (link: MediaLink) => Promise<T>,
  ready: readonly string[] = plans.map((p) => p.name),
): Promise<T> {
  using _q = quiet();
  const relay = await startTestRelay();
  const producers = new Map(plans.map((p) => [p.name, new TrackProducer({ cache: 64 })]));
  const frames = new Map(plans.map((p) => [p.name, new Frames()]));
  const stops = plans.map((p) => publish(p, producers.get(p.name)!, frames.get(p.name)!));
  const proxy = startUdpProxy({ targetPort: relay.port, toClient: SLOW_LINK, seed: 7 });
  const sessions: { close(): void }[] = [];
  try {
    const pub = await dialOurs(relay.port, {
      moq: { serve: (r) => (r.path === PATH && producers.get(r.track)) || "not_found" },
    });
    sessions.push({ close: () => pub.close(0, "done") });
    pub.announce(PATH);
    const seen = new Set<string>();
    let allSeen!: () => void;
    const flowing = new Promise<void>((resolve) => (allSeen = resolve));
    const subscriber = await kind(proxy.port, priorities, (track, frame) => {
      const view = new DataView(frame.buffer, frame.byteOffset, 12);
      const arrival = { group: view.getUint32(8), sentAt: view.getFloat64(0), at: wallMs() };
      frames.get(track)!.arrivals.push(arrival);
      if (ready.includes(track)) seen.add(track);
      if (seen.size === ready.length) allSeen();
    });
    sessions.push(subscriber);
    await flowing;
    return await run({ proxy, frames, subscriber });
  } finally {
    for (const s of sessions) s.close();
    for (const stop of stops) stop();
    await proxy.close();
    await relay.stop();
  }
}

// Writes the plan's frames on a timer into `producer` until stopped; each frame carries its
// write time (bytes 0..8) and its group (8..12).
function publish(plan: TrackPlan, producer: TrackProducer, frames: Frames): () => void {
  let sequence = 0;
  let group: LiveFrames | undefined;
  const timer = setInterval(() => {
    const next = !group || group.frames.length === plan.gop;
    if (next) sequence++;
    const frame = stampedFrame(plan.frame);
    const view = new DataView(frame.buffer);
    view.setUint32(8, sequence);
    frames.sent.push(view.getFloat64(0));
    if (plan.gop === 1) {
      producer.writeGroup(sequence, frame);
      return;
    }
    if (!next) return group!.push(frame);
    group?.finish();
    group = new LiveFrames(0n);
    group.push(frame);
    producer.writeGroup(sequence, group);
  }, plan.everyMs);
  return () => {
    clearInterval(timer);
    group?.finish();
  };
}
