// What the client tests share: a feed read in the background with its
// states, a sender posting all the time, and the ledger's own account.
import assert from "node:assert/strict";
import {
  type Dialer,
  type Feed,
  type FeedRecord,
  type FeedState,
  post,
} from "../../src/client/mod.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import { stallable } from "../support/moq.ts";
import { until } from "../support/wait.ts";

/** A feed being read in the background: every record, and every state with its time. */
export class Reader {
  readonly records: FeedRecord[] = [];
  readonly states: { state: FeedState; at: number }[] = [];
  readonly done: Promise<unknown>;
  readonly feed: Feed;

  constructor(feed: Feed) {
    this.feed = feed;
    this.states.push({ state: feed.state, at: Date.now() });
    feed.addEventListener("statechange", () => {
      this.states.push({ state: feed.state, at: Date.now() });
    });
    this.done = (async () => {
      for await (const r of feed) this.records.push(r);
    })();
  }

  /** Waits until `n` records arrived. */
  async count(n: number): Promise<void> {
    await until(() => this.records.length >= n, `${n} records (have ${this.records.length})`);
  }

  /** Waits until the record of `group` arrived. */
  async has(group: string): Promise<void> {
    await until(() => this.records.some((r) => r.group === group), `record ${group}`);
  }

  /** Waits until the feed is in `state`; returns when that was. */
  async reaches(state: FeedState, after = 0): Promise<number> {
    await until(
      () => this.states.some((s) => s.state === state && s.at >= after),
      `state ${state}`,
    );
    return this.states.find((s) => s.state === state && s.at >= after)!.at;
  }

  /** Closes the feed and waits for the reading to end. */
  async close(): Promise<void> {
    this.feed.close();
    await this.done;
  }
}

/** Posts `{ n }` records one after another until stopped; keeps what was committed. */
export class Sender {
  readonly committed: { n: number; group: string }[] = [];
  readonly failed: unknown[] = [];
  #stop = false;
  readonly #running: Promise<void>;

  constructor(track: string, options: { token?: () => Promise<string>; gapMs?: number } = {}) {
    this.#running = (async () => {
      for (let n = 0; !this.#stop; n++) {
        try {
          const c = await post(track, { n }, {
            attempts: 20,
            ...(options.token ? { token: options.token } : {}),
          });
          this.committed.push({ n, group: c.group });
        } catch (err) {
          this.failed.push(err);
        }
        await new Promise((r) => setTimeout(r, options.gapMs ?? 10));
      }
    })();
  }

  /** Waits until `n` more records than now were committed. */
  async more(n: number): Promise<void> {
    const target = this.committed.length + n;
    await until(() => this.committed.length >= target, `${target} posts committed`);
  }

  /** Stops posting and waits for the last post to finish. */
  async stop(): Promise<void> {
    this.#stop = true;
    await this.#running;
  }
}

/** Every entry of a track's ledger, oldest first, paged over HTTP. */
export async function ledgerEntries(
  track: string,
  token?: string,
): Promise<{ group: string; payload?: unknown; redacts?: string; redacted?: boolean }[]> {
  const out = [];
  let before: string | undefined;
  for (;;) {
    const url = new URL(track);
    url.searchParams.set("limit", "200");
    if (before) url.searchParams.set("before", before);
    const r = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    assert.equal(r.status, 200);
    const page = await r.json();
    out.unshift(...page.records);
    if (!page.before) return out;
    before = page.before;
  }
}

/** The feed delivered exactly `expected` (ledger groups, in order): none missing, none twice. */
export function assertSameGroups(
  records: readonly FeedRecord[],
  expected: readonly string[],
): void {
  const got = records.map((r) => r.group);
  const seen = new Set<string>();
  const twice = got.filter((g) => seen.has(g) || !seen.add(g));
  assert.deepEqual(twice, [], "no record twice");
  const missing = expected.filter((g) => !seen.has(g));
  assert.deepEqual(missing, [], "no record missing");
  assert.deepEqual(got, expected, "in commit order");
}

/**
 * A native-QUIC dialer whose session can be held (delivery stops, as on a stalled link) and
 * released, with at most 2 concurrent uni streams so a hold makes the relay skip forward.
 */
export function stallableQuicDial(cert: { readonly sha256: Uint8Array }): {
  readonly dial: Dialer;
  hold(): void;
  release(): void;
} {
  let gate: ReturnType<typeof stallable> | undefined;
  return {
    dial: async (url, o) => {
      const session = await connectQuicSession(url, {
        alpn: o.protocols,
        serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
        maxConcurrentUnidirectionalStreams: 2,
      });
      gate = stallable(session);
      return gate.session;
    },
    hold: () => gate!.hold(),
    release: () => gate?.release(),
  };
}
