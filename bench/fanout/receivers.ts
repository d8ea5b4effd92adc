// Child role "receivers": N sessions counting the group streams they get.
import { BROADCAST, PROTOCOL, type Snap, TRACK, type Transport, values } from "./options.ts";
import { connect, connectIetf, type MoqPeer } from "../../src/moq/mod.ts";
import { decodeVarint } from "../../src/wire/mod.ts";
import { dial, interceptGroups } from "./intercept.ts";

import { sleep } from "../../src/timers/mod.ts";

/** The IETF draft an `ietf` receiver speaks (ALPN / WT-Protocol `moqt-16`). */
const IETF_DRAFT = 16;

/**
 * Child: N sessions (raw, moq-lite or IETF draft 16), each counting the group streams it gets.
 * Answers "snap" on stdin with a JSON line; with `--late M`, "late" starts M
 * more sessions spread over one second and records how long their setup took.
 */
export async function receiversRole(): Promise<void> {
  const transport = values.transport as Transport;
  const port = Number(values.port);
  const n = Number(values.n);
  const late = Number(values.late);
  const moq = values.kind !== "raw";
  const ietf = values.kind === "ietf";
  const groups: number[] = [];
  const highest: number[] = [];
  const ok: boolean[] = [];
  const lateSetup: number[] = [];
  let failed = 0;
  const pool: ArrayBuffer[] = [];
  // Raw sessions wait for "go", so that all N are set up before the sender is busy.
  const starts: Array<() => Promise<void>> = [];
  let going = false;

  // One group stream, its type byte already read: GROUP header, then the body.
  const count = async (
    i: number,
    reader: ReadableStreamBYOBReader,
  ): Promise<void> => {
    let buf = pool.pop() ?? new ArrayBuffer(2048);
    let first = true;
    try {
      for (;;) {
        const { value, done } = await reader.read(new Uint8Array(buf));
        if (value) buf = value.buffer;
        if (done) break;
        if (first && value) {
          first = false;
          // moq-lite GROUP header: its length, subscribe id, sequence. IETF subgroup header:
          // track alias, group id.
          const length = ietf ? { value: 0, length: 0 } : decodeVarint(value, 0);
          const id = length && decodeVarint(value, length.length);
          const seq = id && decodeVarint(value, length.length + id.length);
          if (seq && seq.value > highest[i]!) highest[i] = seq.value;
        }
      }
      groups[i]!++;
    } catch {
      // stream reset: not delivered
    } finally {
      pool.push(buf);
    }
  };

  const open = async (i: number): Promise<void> => {
    groups[i] = 0;
    highest[i] = 0;
    const session = interceptGroups(
      await dial(transport, port, values.hash, ietf ? `moqt-${IETF_DRAFT}` : PROTOCOL),
      (reader) => count(i, reader),
      ietf,
    );
    if (!moq) {
      // The raw sender starts on the first bidi stream's byte: on "go" for
      // the steady sessions, at once for the late ones.
      const bidi = await session.openBidi();
      const w = bidi.writable.getWriter();
      starts.push(() => w.write(new Uint8Array([1])));
      if (going) await starts.pop()!();
      return;
    }
    const m: MoqPeer = ietf
      ? await connectIetf(session, IETF_DRAFT, { log: () => {} })
      : await connect(session, { log: () => {} });
    for (;;) {
      const sub = m.subscribe(BROADCAST, TRACK);
      try {
        await sub.ready;
        return;
      } catch {
        await sleep(50); // not announced yet
      }
    }
  };

  // A session whose setup is not done in 20 s counts as failed.
  const opened = (i: number): Promise<void> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    return Promise.race([
      open(i),
      new Promise<void>((_, reject) => (timer = setTimeout(reject, 20_000))),
    ]).finally(() => clearTimeout(timer));
  };
  const steady: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    steady.push(opened(i).then(() => void (ok[i] = true), () => void failed++));
    if (i % 50 === 49) await Promise.all(steady.slice(-50));
  }
  await Promise.all(steady);
  console.log(JSON.stringify({ ready: true, failed }));
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    for (const cmd of line.split("\n")) {
      if (cmd === "go") {
        going = true;
        await Promise.all(starts.splice(0).map((start) => start()));
      } else if (cmd === "snap") {
        const snap: Snap = { at: performance.now(), groups, highest, ok, lateSetup, failed };
        console.log(JSON.stringify(snap));
      } else if (cmd === "late") {
        for (let k = 0; k < late; k++) {
          const i = n + k;
          lateSetup[k] = -1;
          const t0 = performance.now();
          open(i).then(() => (lateSetup[k] = performance.now() - t0), () => {});
          await sleep(1000 / late);
        }
      } else if (cmd === "exit") Deno.exit(0);
    }
  }
}
