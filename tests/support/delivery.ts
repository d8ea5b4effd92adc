// Counting what subscribers (ours and @moq/net) receive while a test sends:
// each reader runs concurrently with the sender, as real subscribers do, and
// stops once every expected sequence is in or its deadline passes.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import type { Subscription } from "../../src/moq/mod.ts";
import { dialNet, dialOurs, seeAnnounced } from "./moq.ts";
import type { UdpProxy } from "./udp_proxy.ts";
import { sleep } from "../../src/timers/mod.ts";

const decoder = new TextDecoder();
/** How often a reader waiting for a group checks whether it has everything already. */
const RECHECK_MS = 100;

/** One received group: its sequence and first frame as text. */
export interface Delivered {
  readonly sequence: number;
  readonly text: string;
}

/** Reads the next group, or undefined when the subscription ended. */
export type NextGroup = () => Promise<Delivered | undefined>;

/** The reader of one of our subscriptions. */
export function oursReader(sub: Subscription): NextGroup {
  const it = sub[Symbol.asyncIterator]();
  return async () => {
    const r = await it.next();
    return r.done
      ? undefined
      : { sequence: r.value.sequence, text: decoder.decode(r.value.frames[0]) };
  };
}

/** The reader of an @moq/net subscription: every group once, late ones too (`recvGroup`). */
export function netReader(sub: Net.Track.Subscriber): NextGroup {
  return async () => {
    const g = await sub.recvGroup();
    if (!g) return undefined;
    const f = await g.readFrame();
    return { sequence: g.sequence, text: decoder.decode(f?.payload) };
  };
}

/** What one subscriber received, in arrival order. */
export class Tally {
  /** Sequences in arrival order (duplicates kept, so they can be found). */
  readonly got: number[] = [];
  /** Frame texts by sequence. */
  readonly texts: Map<number, string> = new Map();

  /** Sequences of `expected` that never arrived. */
  missing(expected: Iterable<number>): number[] {
    const got = new Set(this.got);
    return [...expected].filter((s) => !got.has(s));
  }

  /** Sequences that arrived more than once. */
  duplicates(): number[] {
    const seen = new Set<number>();
    return this.got.filter((s) => seen.has(s) || !seen.add(s));
  }

  /** Arrivals that came after a higher sequence (how much the link reordered). */
  outOfOrder(): number {
    let highest = -1;
    let n = 0;
    for (const s of this.got) {
      if (s < highest) n++;
      else highest = s;
    }
    return n;
  }
}

/**
 * Reads with `next` into a new tally until `expected()` (undefined while the
 * sender is still sending) is all in, the subscription ends, or `signal` aborts.
 */
export function collect(
  next: NextGroup,
  expected: () => ReadonlySet<number> | undefined,
  signal: AbortSignal,
): { tally: Tally; done: Promise<void> } {
  const tally = new Tally();
  const aborted = new Promise<undefined>((resolve) => {
    if (signal.aborted) resolve(undefined);
    signal.addEventListener("abort", () => resolve(undefined), { once: true });
  });
  const complete = () => {
    const want = expected();
    return want !== undefined && tally.missing(want).length === 0;
  };
  const done = (async () => {
    // The read in flight is kept across checks: `expected()` can become complete while no
    // group is coming (the last one arrived before the sender said it was done).
    let pending: Promise<Delivered | undefined> | undefined;
    while (!signal.aborted && !complete()) {
      pending ??= next();
      const tick = new AbortController();
      const g = await Promise.race([
        pending,
        aborted,
        sleep(RECHECK_MS, tick.signal).then(() => "recheck" as const),
      ]);
      tick.abort();
      if (g === "recheck") continue;
      pending = undefined;
      if (!g) return;
      tally.got.push(g.sequence);
      tally.texts.set(g.sequence, g.text);
    }
  })();
  return { tally, done };
}

/**
 * Our subscriber and @moq/net's on `port`, both subscribed to `path` `track`
 * (starting at its latest group), reading until `expected()` is all in.
 */
export async function subscriberPair(
  port: number,
  expected: () => ReadonlySet<number> | undefined,
  path = "room/1",
  track = "chat",
): Promise<{
  warm(sequence: number): Promise<void>;
  start(signal: AbortSignal): { tally: Tally; done: Promise<void> }[];
  close(): void;
}> {
  const ours = await dialOurs(port);
  await seeAnnounced(ours, path);
  // A queue as long as the test: what is measured is the link, not how fast the test reads.
  const sub = ours.subscribe(path, track, { queueLimit: 4096 });
  await sub.ready;
  const net = await dialNet(port);
  const netSub = net.consume(Net.Path.from(path)).track(track).subscribe({ priority: 1 });
  const readers = [oursReader(sub), netReader(netSub)];
  return {
    async warm(sequence) {
      for (const next of readers) while ((await next())?.sequence !== sequence);
    },
    start: (signal) => readers.map((next) => collect(next, expected, signal)),
    close() {
      sub.close();
      net.close();
      ours.close(0, "done");
    },
  };
}

const WHO = ["ours", "@moq/net"];

/** Prints what was sent, what each of the pair received and what the link (if any) did. */
export function report(what: string, sent: number, tallies: Tally[], proxy?: UdpProxy): void {
  const got = tallies.map((t, i) =>
    `${WHO[i]} got ${
      new Set(t.got).size
    } (${t.outOfOrder()} out of order, ${t.duplicates().length} twice)`
  );
  const link = proxy ? `; link ${JSON.stringify(proxy.counts)}` : "";
  console.log(`${what}: sent ${sent}; ${got.join(", ")}${link}`);
}

/** Every expected sequence arrived exactly once at each of the pair, with `text(sequence)`. */
export function assertExactlyOnce(
  tallies: Tally[],
  expected: ReadonlySet<number>,
  text: (sequence: number) => string,
): void {
  for (const [i, t] of tallies.entries()) {
    assert.deepEqual(t.missing(expected), [], `${WHO[i]}: missing groups`);
    assert.deepEqual(t.duplicates(), [], `${WHO[i]}: duplicated groups`);
    for (const s of expected) assert.equal(t.texts.get(s), text(s), `${WHO[i]}: group ${s}`);
  }
}
