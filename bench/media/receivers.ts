// Child role "receivers": N sessions parsing the group streams they get and timing each frame.
import { BROADCAST, PROTOCOL, type Snap, TRACK, values } from "./options.ts";
import { GroupStreamParser, wallMs } from "./frames.ts";
import { dial, interceptGroups } from "../fanout/intercept.ts";
import { quantile } from "../support/quantile.ts";
import { connect } from "../../src/moq/mod.ts";
import type { Session } from "../../src/transport/mod.ts";
import { sleep } from "../../src/timers/mod.ts";

/** What the sessions of this process received since the last "start". */
class Tally {
  frames = 0;
  bytes = 0;
  latencies: number[] = [];
  since = performance.now();

  frame(sentAt: number, size: number): void {
    this.frames++;
    this.bytes += size;
    this.latencies.push(wallMs() - sentAt);
  }

  restart(): void {
    this.frames = this.bytes = 0;
    this.latencies = [];
    this.since = performance.now();
  }

  snap(failed: number): Snap {
    const sorted = this.latencies.sort((a, b) => a - b);
    const q = (p: number) => (sorted.length ? quantile(sorted, p) : NaN);
    const at = performance.now();
    return {
      at,
      seconds: (at - this.since) / 1000,
      frames: this.frames,
      bytes: this.bytes,
      p50: q(0.5),
      p99: q(0.99),
      max: sorted.at(-1) ?? NaN,
      failed,
    };
  }
}

/**
 * Child: N sessions (raw or moq) timing every frame they read. Commands on
 * stdin: "go" starts the raw sender, "start" begins the measured window,
 * "snap" answers its figures with a JSON line.
 */
export async function receiversRole(): Promise<void> {
  const tally = new Tally();
  const starts: Array<() => Promise<void>> = [];
  let failed = 0;
  const n = Number(values.n);
  for (let i = 0; i < n; i += 50) {
    const batch = Array.from({ length: Math.min(50, n - i) }, () => opened(tally, starts));
    for (const ok of await Promise.all(batch)) if (!ok) failed++;
  }
  console.log(JSON.stringify({ ready: true, failed }));
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    for (const cmd of line.split("\n")) {
      if (cmd === "go") await Promise.all(starts.splice(0).map((start) => start()));
      else if (cmd === "start") tally.restart();
      else if (cmd === "snap") console.log(JSON.stringify(tally.snap(failed)));
      else if (cmd === "exit") Deno.exit(0);
    }
  }
}

// One session set up within 20 s; false when it was not.
async function opened(tally: Tally, starts: Array<() => Promise<void>>): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      open(tally, starts),
      new Promise<void>((_, reject) => (timer = setTimeout(reject, 20_000))),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

// Dials, hands group streams to a parser, and subscribes (moq) or waits for "go" (raw).
async function open(tally: Tally, starts: Array<() => Promise<void>>): Promise<void> {
  const session: Session = interceptGroups(
    await dial("quic", Number(values.port), values.hash, PROTOCOL),
    (reader) => parse(reader, tally),
  );
  if (values.kind === "raw") {
    const w = (await session.openBidi()).writable.getWriter();
    starts.push(() => w.write(new Uint8Array([1])));
    return;
  }
  const moq = await connect(session, { log: () => {} });
  for (;;) {
    try {
      await moq.subscribe(BROADCAST, TRACK).ready;
      return;
    } catch {
      await sleep(50); // not announced yet (on a peer relay: not yet learnt)
    }
  }
}

// One group stream, frame by frame as its bytes arrive.
async function parse(reader: ReadableStreamBYOBReader, tally: Tally): Promise<void> {
  const parser = new GroupStreamParser((sentAt, size) => tally.frame(sentAt, size));
  let buf = new ArrayBuffer(16384);
  try {
    for (;;) {
      const { value, done } = await reader.read(new Uint8Array(buf));
      if (done) break;
      parser.push(value);
      buf = value.buffer;
    }
  } catch {
    // stream reset: its frames so far were counted
  }
}
