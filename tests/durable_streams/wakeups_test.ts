// A live reader whose storage read is slow, with an append committed while
// that read is in progress: the read returns what storage held when it began
// (nothing new), and the reader must still answer with the append at once,
// not when its wait runs out (20 s for a long-poll, 60 s for SSE, the
// defaults this funnel runs at).
import assert from "node:assert/strict";
import type { LedgerBackend, LedgerEntry, TrackBackend, TrackPath } from "../../src/ledger/mod.ts";
import { MemoryBackend } from "../../src/ledger/mod.ts";
import { quiet } from "../support/quiet.ts";
import { startLiveFunnel } from "../support/live_funnel.ts";
import { within } from "../support/wait.ts";

/**
 * The memory backend, with a read of one track that can be held: armed, the
 * `nth` read that finds nothing past `after` takes its snapshot, tells
 * `entered`, and returns that snapshot only once released.
 */
class HeldReads implements LedgerBackend {
  readonly name = "memory";
  readonly #inner = new MemoryBackend();
  #armed: { track: string; nth: number; entered: () => void; release: Promise<void> } | undefined;

  /** Holds the `nth` empty read of `track` from now; resolves `entered` when it is held. */
  hold(track: string, nth: number): { entered: Promise<void>; release: () => void } {
    let entered!: () => void;
    let release!: () => void;
    const enteredP = new Promise<void>((r) => entered = r);
    const releaseP = new Promise<void>((r) => release = r);
    this.#armed = { track, nth, entered, release: releaseP };
    return { entered: enteredP, release };
  }

  listTracks(): Promise<TrackPath[]> {
    return this.#inner.listTracks();
  }

  async openTrack(path: TrackPath, create: boolean): Promise<TrackBackend | undefined> {
    const track = await this.#inner.openTrack(path, create);
    if (!track) return undefined;
    const name = path.track;
    const readAfter = async (after: number | undefined, limit: number): Promise<LedgerEntry[]> => {
      const found = await track.readAfter(after, limit);
      const armed = this.#armed;
      if (armed?.track === name && found.length === 0 && --armed.nth === 0) {
        this.#armed = undefined;
        armed.entered();
        await armed.release;
      }
      return found;
    };
    return new Proxy(track, {
      get: (target, prop) => {
        if (prop === "readAfter") return readAfter;
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

async function append(url: string, text: string): Promise<void> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "text/plain" },
    body: text,
  });
  assert.equal(response.status, 204);
  await response.body?.cancel();
}

async function created(url: string): Promise<string> {
  const put = await fetch(url, { method: "PUT", headers: { "content-type": "text/plain" } });
  assert.equal(put.status, 201);
  await put.body?.cancel();
  await append(url, "a");
  const head = await fetch(url, { method: "HEAD" });
  return head.headers.get("stream-next-offset")!;
}

Deno.test("A long-poll whose read is in progress when an append commits answers with it at once", async () => {
  using _q = quiet();
  const backend = new HeldReads();
  await using f = await startLiveFunnel({}, { backend });
  const url = `${f.base}/v1/stream/room/poll`;
  const tail = await created(url);
  const held = backend.hold("poll", 1);
  const poll = fetch(`${url}?offset=${tail}&live=long-poll`);
  await within(held.entered, 10_000, "the long-poll's read");
  await append(url, "b");
  held.release();
  // Before, the long-poll began waiting only after this read and slept through the append.
  const response = await within(poll, 5_000, "the long-poll's answer (its wait is 20 s)");
  assert.equal(response.status, 200);
  assert.equal(await response.text(), "b");
});

Deno.test("An SSE reader whose read is in progress when an append commits sends it at once", async () => {
  using _q = quiet();
  const backend = new HeldReads();
  await using f = await startLiveFunnel({}, { backend });
  const url = `${f.base}/v1/stream/room/sse`;
  const tail = await created(url);
  // The first empty read opens the response (its control event); the second is the wait's.
  const held = backend.hold("sse", 2);
  const response = await fetch(`${url}?offset=${tail}&live=sse`);
  assert.equal(response.status, 200);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  try {
    await within(held.entered, 10_000, "the SSE reader's second read");
    await append(url, "b");
    held.release();
    let text = "";
    const data = (async () => {
      while (!/event: data\ndata:b\n/.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`SSE ended without the append: ${text}`);
        text += value;
      }
    })();
    await within(data, 5_000, "the append as an SSE data event (the response stays open 60 s)");
  } finally {
    await reader.cancel();
  }
});
