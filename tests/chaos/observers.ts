// The subscribers of a chaos run, each recording what it received: raw
// @moq/net subscribers (which resubscribe when their session ends; each
// subscription is judged on its own), sluice's client feed (which repairs
// from history and reports what it cannot as gap events), and a Durable
// Streams reader following by long-poll.
import * as Net from "@moq/net";
import { FeedGapEvent, type FeedRecord, openFeed, SessionPool } from "../../src/client/mod.ts";
import { sleep } from "../../src/timers/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { dialNet } from "../support/moq.ts";
import { recordStreams, type StreamSpan } from "./net_streams.ts";

const decoder = new TextDecoder();

/** One subscription of a raw subscriber: what it received, and whether it ended. */
export class RawSubscription {
  /** Frame text by group sequence (the first arrival). */
  readonly got: Map<number, string> = new Map();
  /** The sequence of the first group it received. */
  first: number | undefined;
  duplicates = 0;
  /** Groups that ended without a frame (reset by the publisher or the link). */
  empty = 0;
  /** Why it ended before the run did (undefined: it kept up to the end). */
  ended: string | undefined;
  /** The max latency TRACK_INFO gave: `@moq/net` drops a complete group unread that long. */
  latencyMax: number | undefined;
  /** The group streams that reached `@moq/net` beneath it, by sequence (see net_streams.ts). */
  streams: ReadonlyMap<number, StreamSpan> = new Map();
}

/** A raw @moq/net subscriber of one track that resubscribes until stopped. */
export class RawSubscriber {
  readonly subscriptions: RawSubscription[] = [];
  readonly #abort = new AbortController();
  readonly #done: Promise<void>;
  #close: ((why: string) => void) | undefined;

  /** Starts subscribing to `broadcast`/`track` on `port` (127.0.0.1, native QUIC). */
  constructor(readonly name: string, port: number, broadcast: string, track: string) {
    this.#done = this.#run(port, broadcast, track);
  }

  async #run(port: number, broadcast: string, track: string): Promise<void> {
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      const sub = new RawSubscription();
      this.subscriptions.push(sub);
      let conn: Awaited<ReturnType<typeof dialNet>> | undefined;
      try {
        conn = await dialNet(port);
        const c = conn;
        signal.addEventListener("abort", () => c.close(), { once: true });
        this.#close = (why) => {
          sub.ended = why;
          c.close();
        };
        const { result: s, streams } = recordStreams(() =>
          c.consume(Net.Path.from(broadcast)).track(track).subscribe({ priority: 1 })
        );
        sub.streams = streams;
        s.info().then((info) => (sub.latencyMax = info.latencyMax), () => {});
        for (;;) {
          const g = await s.recvGroup();
          if (!g) break;
          sub.first ??= g.sequence;
          // A group reset before its frame arrived (expired, or its stream cut) delivered nothing.
          const f = await g.readFrame().catch(() => undefined);
          if (!f) sub.empty++;
          else if (sub.got.has(g.sequence)) sub.duplicates++;
          else sub.got.set(g.sequence, decoder.decode(f.payload));
        }
        sub.ended ??= "the subscription ended";
      } catch (e) {
        sub.ended ??= e instanceof Error ? e.message : String(e);
      } finally {
        this.#close = undefined;
        try {
          conn?.close();
        } catch {
          // closed already
        }
      }
      if (signal.aborted) sub.ended = undefined;
      else await sleep(300, signal);
    }
  }

  /** Ends the current subscription (its server is gone); a new one follows. */
  resubscribe(why: string): void {
    this.#close?.(why);
  }

  /** The subscription that is open now, if any. */
  current(): RawSubscription | undefined {
    const last = this.subscriptions.at(-1);
    return last && last.ended === undefined ? last : undefined;
  }

  /** Stops; the subscription open at that moment counts as kept up. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#done;
  }
}

/** Sluice's client feed of one track, from its start, recording records and gap events. */
export class ClientFeed {
  readonly records: FeedRecord[] = [];
  readonly gaps: { from: string; to: string }[] = [];
  readonly errors: string[] = [];
  readonly #abort = new AbortController();
  readonly #done: Promise<void>;
  readonly #sessions = new SessionPool();

  /** Opens the feed of `trackUrl` over native QUIC to `port`. */
  constructor(trackUrl: string, port: number, sha256: Uint8Array) {
    const feed = openFeed({
      track: trackUrl,
      moq: `moqt://localhost:${port}/`,
      serverCertificateHashes: [{ algorithm: "sha-256", value: sha256 }],
      from: "start",
      signal: this.#abort.signal,
      sessions: this.#sessions,
    });
    feed.addEventListener("gap", (e) => {
      if (e instanceof FeedGapEvent) this.gaps.push({ from: e.from, to: e.to });
    });
    feed.addEventListener(
      "error",
      (e) => this.errors.push(String((e as { reason?: string }).reason)),
    );
    this.#done = (async () => {
      try {
        for await (const r of feed) this.records.push(r);
      } catch (e) {
        this.errors.push(e instanceof Error ? e.message : String(e));
      }
    })();
  }

  /** Closes the feed. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#done;
  }
}

/** A Durable Streams reader following one JSON stream by long-poll from its start. */
export class StreamReader {
  /** Message texts in the order read. */
  readonly messages: string[] = [];
  readonly #abort = new AbortController();
  readonly #done: Promise<void>;

  /** Follows the stream at `url`. */
  constructor(url: string) {
    this.#done = this.#run(url);
  }

  async #run(url: string): Promise<void> {
    const signal = this.#abort.signal;
    let offset = "-1";
    while (!signal.aborted) {
      try {
        const res = await fetch(`${url}?offset=${offset}&live=long-poll`, { signal });
        const text = await res.text();
        if (res.status === 200) {
          for (const m of JSON.parse(text) as unknown[]) this.messages.push(JSON.stringify(m));
        }
        const next = res.headers.get("stream-next-offset");
        if (next) offset = next;
        if (res.status >= 400) await sleep(200, signal);
      } catch {
        await sleep(200, signal);
      }
    }
  }

  /** Stops reading. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#done;
  }
}

/** The test certificate's SHA-256, as the client feed pins it. */
export async function certificateHash(): Promise<Uint8Array> {
  return (await testCertificate()).sha256;
}
