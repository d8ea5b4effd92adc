// A userspace UDP proxy that makes a lossy, slow, reordering link between a
// client and a UDP service (this machine has no netem). Each client address
// gets its own upstream socket, so replies find their way back, and each
// direction has its own shape: a share of datagrams dropped, a one-way delay
// with jitter, a share held back long enough for later ones to overtake, and a
// bottleneck: a rate limit in front of a bounded queue that drops what does not
// fit (tail drop), as a router on a slow link does. Decisions come from a
// seeded generator, so a failing run can be replayed; the bottleneck draws
// nothing at random (what it drops depends only on when datagrams arrive).
import { seededRandom } from "./random.ts";

/** How one direction of the link treats datagrams. */
export interface LinkShape {
  /** Share of datagrams dropped, 0..1 (default 0). */
  readonly loss?: number;
  /** One-way delay in ms (default 0). */
  readonly delayMs?: number;
  /** Extra delay drawn uniformly from 0..jitterMs (default 0). */
  readonly jitterMs?: number;
  /** Share of datagrams held back a further `reorderMs`, so later ones overtake them (default 0). */
  readonly reorder?: number;
  /** How long a reordered datagram is held back, ms (default: the delay, at least 10). */
  readonly reorderMs?: number;
  /** Drop everything: the link is silent (default false). */
  readonly silent?: boolean;
  /**
   * The bottleneck's rate, bytes of datagram payload per second (default: no
   * limit). Datagrams leave it one after another at this rate, then take the
   * delay; those that find its queue full are dropped.
   */
  readonly rateBytesPerSecond?: number;
  /** Bytes the bottleneck's queue holds (default: 100 ms at the rate, at least 16 KiB). */
  readonly queueBytes?: number;
}

/** What one direction did so far. */
export interface LinkCounts {
  /** Datagrams received from the sending side. */
  received: number;
  /** Datagrams dropped at random (`loss`) or by a silent link. */
  dropped: number;
  /** Datagrams dropped because the bottleneck's queue was full. */
  queueDropped: number;
  /** Datagrams held back for reordering. */
  reordered: number;
  /** Datagrams passed on. */
  forwarded: number;
}

/** Options of {@linkcode startUdpProxy}. */
export interface UdpProxyOptions {
  /** The service's UDP port on `targetHost`. */
  readonly targetPort: number;
  /** The service's address (default 127.0.0.1). */
  readonly targetHost?: string;
  /** Client → service shape. */
  readonly toTarget?: LinkShape;
  /** Service → client shape. */
  readonly toClient?: LinkShape;
  /** Seed of the loss/delay/reorder decisions (default 1). */
  readonly seed?: number;
}

/** A running proxy. */
export interface UdpProxy {
  /** The proxy's UDP port on 127.0.0.1: dial this instead of the service. */
  readonly port: number;
  /** Counts per direction. */
  readonly counts: { readonly toTarget: LinkCounts; readonly toClient: LinkCounts };
  /** Changes a direction's shape from now on (e.g. to make the link go silent). */
  reshape(direction: "toTarget" | "toClient", shape: LinkShape): void;
  /** Stops forwarding and closes every socket (datagrams still delayed are dropped). */
  close(): Promise<void>;
}

function emptyCounts(): LinkCounts {
  return { received: 0, dropped: 0, queueDropped: 0, reordered: 0, forwarded: 0 };
}

/**
 * A rate limit in front of a bounded FIFO queue. It keeps only the time its
 * last queued datagram finishes leaving: the backlog in bytes is what the
 * rate has not sent by then.
 */
export class Bottleneck {
  #freeAt = 0;

  /**
   * How long a datagram of `size` bytes arriving at `now` (ms) waits and takes
   * to leave under `shape` (0 without a rate), or undefined when the queue has
   * no room for it.
   */
  admit(shape: LinkShape, size: number, now: number): number | undefined {
    const rate = shape.rateBytesPerSecond;
    if (rate === undefined || rate <= 0) return 0;
    const limit = shape.queueBytes ?? Math.max(16_384, rate / 10);
    const start = Math.max(now, this.#freeAt);
    const backlog = (start - now) * rate / 1000;
    if (backlog + size > limit) return undefined;
    this.#freeAt = start + size * 1000 / rate;
    return this.#freeAt - now;
  }
}

/** Starts a proxy on 127.0.0.1 (a free UDP port) in front of `targetHost:targetPort`. */
export function startUdpProxy(options: UdpProxyOptions): UdpProxy {
  const random = seededRandom(options.seed ?? 1);
  const shapes = { toTarget: options.toTarget ?? {}, toClient: options.toClient ?? {} };
  const counts = { toTarget: emptyCounts(), toClient: emptyCounts() };
  const bottlenecks = { toTarget: new Bottleneck(), toClient: new Bottleneck() };
  const target: Deno.NetAddr = {
    transport: "udp",
    hostname: options.targetHost ?? "127.0.0.1",
    port: options.targetPort,
  };
  const front = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const upstreams = new Map<string, Deno.DatagramConn>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const tasks = new Set<Promise<void>>();
  let closed = false;

  const pass = (
    direction: "toTarget" | "toClient",
    data: Uint8Array,
    send: (data: Uint8Array) => Promise<unknown>,
  ): void => {
    const shape = shapes[direction];
    const c = counts[direction];
    c.received++;
    if (shape.silent || random() < (shape.loss ?? 0)) {
      c.dropped++;
      return;
    }
    const queued = bottlenecks[direction].admit(shape, data.length, performance.now());
    if (queued === undefined) {
      c.queueDropped++;
      return;
    }
    let delay = queued + (shape.delayMs ?? 0) + random() * (shape.jitterMs ?? 0);
    if (random() < (shape.reorder ?? 0)) {
      c.reordered++;
      delay += shape.reorderMs ?? Math.max(10, shape.delayMs ?? 0);
    }
    const forward = (): void => {
      if (closed) return;
      c.forwarded++;
      // A send can fail once the other side is gone; the link simply loses it.
      send(data).catch(() => {});
    };
    if (delay <= 0) return forward();
    const id = setTimeout(() => {
      timers.delete(id);
      forward();
    }, delay);
    timers.add(id);
  };

  const pump = async (
    conn: Deno.DatagramConn,
    onData: (data: Uint8Array, from: Deno.NetAddr) => void,
  ): Promise<void> => {
    try {
      for await (const [data, from] of conn) onData(data, from as Deno.NetAddr);
    } catch {
      // The socket was closed by close(): nothing more to forward.
    }
  };

  const track = (task: Promise<void>): void => {
    tasks.add(task);
    task.finally(() => tasks.delete(task));
  };

  const upstreamFor = (client: Deno.NetAddr): Deno.DatagramConn => {
    const key = `${client.hostname}:${client.port}`;
    let up = upstreams.get(key);
    if (up) return up;
    up = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    upstreams.set(key, up);
    const back = up;
    track(pump(back, (data) => pass("toClient", data, (d) => front.send(d, client))));
    return up;
  };

  track(pump(front, (data, from) => {
    const up = upstreamFor(from);
    pass("toTarget", data, (d) => up.send(d, target));
  }));

  return {
    port: (front.addr as Deno.NetAddr).port,
    counts,
    reshape(direction, shape): void {
      shapes[direction] = shape;
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      for (const id of timers) clearTimeout(id);
      timers.clear();
      front.close();
      for (const up of upstreams.values()) up.close();
      while (tasks.size > 0) await Promise.allSettled([...tasks]);
    },
  };
}
