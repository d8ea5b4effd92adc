// An in-process route source for routing and fan-out unit tests: each upstream
// subscription is a queue the test pushes groups into.
import type { TrackCursor } from "../../../src/moq/mod.ts";
import type { IncomingGroup, UpstreamTrack } from "../../../src/relay/routing/upstream_track.ts";
import type { RouteSource } from "../../../src/relay/routing/route_table.ts";
import { BackpressureQueue } from "../../../src/wire/mod.ts";

/** One upstream subscription opened on a {@linkcode FakeSource}. */
export interface FakeUpstream {
  readonly track: string;
  readonly start: number | undefined;
  readonly groups: BackpressureQueue<IncomingGroup>;
  closed: boolean;
  /** Groups its queue dropped (what the relay's upstream queue reports on overflow). */
  dropped: number;
  /** Answers the subscription (SUBSCRIBE_START): a switch releases the old upstream then. */
  answer(): void;
}

/** A route source whose upstreams the test feeds by hand. */
export class FakeSource implements RouteSource {
  readonly remote: string;
  readonly hops: number;
  readonly upstreams: FakeUpstream[] = [];
  fail = false;
  /** SUBSCRIBE is never answered (a stuck peer). */
  stall = false;
  /** Upstreams are answered as soon as they open (else by `answer()`). */
  autoAnswer = true;
  dead = false;
  rtt: number | undefined;
  /** Groups a FETCH through this source finds (the far side's ledger or ring). */
  readonly held = new Map<number, IncomingGroup>();
  /** Sequences fetched through this source, in order. */
  readonly fetched: number[] = [];

  constructor(hops = 0, remote = "192.0.2.1:5000") {
    this.hops = hops;
    this.remote = remote;
  }

  /** Track names subscribed so far. */
  get subscribes(): string[] {
    return this.upstreams.map((u) => u.track);
  }

  subscribe(track: string, options: { start?: number } = {}): Promise<UpstreamTrack> {
    if (this.fail) return Promise.reject(new Error("track does not exist"));
    if (this.stall) return new Promise(() => {});
    let answer = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const u: FakeUpstream = {
      track,
      start: options.start,
      groups: new BackpressureQueue<IncomingGroup>(Infinity),
      closed: false,
      dropped: 0,
      answer,
    };
    if (this.autoAnswer) answer();
    this.upstreams.push(u);
    return Promise.resolve({
      groups: u.groups,
      close: () => {
        u.closed = true;
        u.groups.end();
      },
      answered,
      skipped: () => u.dropped,
    });
  }

  fetch(_track: string, sequence: number): Promise<IncomingGroup> {
    this.fetched.push(sequence);
    const g = this.held.get(sequence);
    return g ? Promise.resolve(g) : Promise.reject(new Error(`group ${sequence} not found`));
  }

  rttMs(): number | undefined {
    return this.rtt;
  }

  alive(): boolean {
    return !this.dead;
  }

  /** The latest upstream subscription's queue. */
  get last(): BackpressureQueue<IncomingGroup> {
    return this.upstreams[this.upstreams.length - 1]!.groups;
  }
}

/** A group of one frame. */
export function group(sequence: number, text = `g${sequence}`): IncomingGroup {
  return { sequence, frames: [new TextEncoder().encode(text)] };
}

/** Reads `n` groups from a cursor (what a subscriber's session does). */
export async function take(c: TrackCursor, n: number): Promise<number[]> {
  const out: number[] = [];
  while (out.length < n) {
    const g = await c.next();
    if (!g) break;
    out.push(g.sequence);
  }
  return out;
}

/** Lets queued microtasks and timers of 0 ms run. */
export function settle(): Promise<void> {
  return new Promise((r) => setTimeout(r, 0));
}
