/**
 * One live link: a subscription to the track on a shared MoQ session (to
 * the relay or the funnel's listener). The feed replaces a link that ends
 * (reconnect) or whose credential is due (renew).
 */
import { MoqError, type ReceivedGroup, type TrackInfo } from "../moq/mod.ts";
import { errorText } from "../error_text/mod.ts";
import { timeoutSignal } from "../timers/mod.ts";
import { QMuxConnectError } from "../transport/mod.ts";
import { RefusedError } from "./errors.ts";
import {
  PROBE_TIMEOUT_MS,
  type SessionLease,
  type SessionPool,
  type SessionTarget,
  SETUP_TIMEOUT_MS,
} from "./session_pool.ts";

/** What a link needs. */
export interface LinkOptions {
  /** Where to dial, with the current credential in its `jwt` parameter. */
  readonly target: () => Promise<SessionTarget>;
  /** The sessions shared with other links. */
  readonly pool: SessionPool;
  /** Broadcast path and track name. */
  readonly broadcast: string;
  /** Track name. */
  readonly name: string;
  /** First MoQ group sequence wanted. */
  readonly start: number;
  /** Told of every group received, in arrival order. */
  readonly onGroup: (group: ReceivedGroup, link: LiveLink) => void;
  /** Told once the subscription is accepted. */
  readonly onReady: (link: LiveLink) => void;
}

/** How a link ended: why, and the server's refusal when it refused the subscription. */
export interface LinkEnd {
  /** Why, in words. */
  readonly ended: string;
  /** Set when the server refused the subscription (its error code said why). */
  readonly refused?: RefusedError;
  /** What ended it, when something failed. */
  readonly error?: unknown;
}

/** A subscription on a shared session; `settled` resolves (never rejects) once it is over. */
export class LiveLink {
  /** Resolves true once the subscription is accepted, false if the link ended first. */
  readonly opened: Promise<boolean>;
  /**
   * Resolves with whichever comes first: the link ended, or the server asked
   * it to go away (GOAWAY, with the URI to move to, possibly empty).
   */
  readonly settled: Promise<LinkEnd | { readonly goaway: string }>;
  readonly #abort = new AbortController();
  #lease: SessionLease | undefined;
  #transport: string | undefined;
  #version: string | undefined;
  #info: TrackInfo | undefined;
  #drops: () => ReadonlyArray<readonly [number, number]> = () => [];
  #ready = false;
  #opened!: (ready: boolean) => void;

  /** Starts subscribing at once. */
  constructor(options: LinkOptions) {
    this.opened = new Promise((resolve) => this.#opened = resolve);
    let goaway!: (uri: string) => void;
    const away = new Promise<string>((resolve) => goaway = resolve);
    const ended = this.#run(options, goaway).then(
      (ended): LinkEnd => ({ ended }),
      (err): LinkEnd => {
        const refused = refusal(err);
        return { ended: errorText(err), error: err, ...(refused ? { refused } : {}) };
      },
    ).finally(() => {
      this.close();
      this.#opened(false);
    });
    this.settled = Promise.race([ended, away.then((uri) => ({ goaway: uri }))]);
  }

  /** True once the subscription was accepted, even if the link has ended since. */
  get wasReady(): boolean {
    return this.#ready;
  }

  /** True once the subscription was accepted (and until the link ends). */
  get ready(): boolean {
    return this.#ready && !this.#abort.signal.aborted;
  }

  /** The publisher's track properties (timescale of the frame timestamps). */
  get info(): TrackInfo | undefined {
    return this.#info;
  }

  /** The transport the link's session runs on, once set up. */
  get transport(): string | undefined {
    return this.#transport;
  }

  /** MoQ ranges (inclusive) the publisher said it will never deliver. */
  get drops(): ReadonlyArray<readonly [number, number]> {
    return this.#drops();
  }

  /** Fetches one group over this link's session (lite-05); rejects when it is not available. */
  async fetch(broadcast: string, name: string, sequence: number): Promise<ReceivedGroup> {
    const session = this.#lease?.session;
    if (!session || session.over || this.#version !== "moq-lite-05") {
      throw new Error("No lite-05 session to fetch over");
    }
    const moq = await session.moq;
    const timeout = timeoutSignal(PROBE_TIMEOUT_MS, session.timers);
    const signal = AbortSignal.any([this.#abort.signal, timeout]);
    const group = await moq.fetch(broadcast, name, sequence, { signal });
    session.heard();
    return group;
  }

  /** Ends the link (idempotent); the session lives on while other links hold it. */
  close(): void {
    this.#abort.abort();
    this.#lease?.release();
  }

  async #run(o: LinkOptions, goaway: (uri: string) => void): Promise<string> {
    const signal = this.#abort.signal;
    const target = await o.target();
    if (signal.aborted) return "closed";
    const lease = o.pool.lease(target, { broadcast: o.broadcast, name: o.name });
    this.#lease = lease;
    if (signal.aborted) {
      lease.release();
      return "closed";
    }
    const session = lease.session;
    const setupTimeout = timeoutSignal(SETUP_TIMEOUT_MS, target.timers);
    const moq = await session.moq;
    this.#transport = moq.transport.transport;
    this.#version = moq.version;
    moq.goaway.then(goaway);
    const sub = moq.subscribe(o.broadcast, o.name, { start: o.start, queueLimit: 4096, signal });
    this.#drops = () => sub.drops;
    const timedOut = new Promise<never>((_, reject) => {
      const onTimeout = () => reject(new Error("the subscription was not accepted in time"));
      setupTimeout.addEventListener("abort", onTimeout, { once: true });
      sub.ready.finally(() => setupTimeout.removeEventListener("abort", onTimeout)).catch(() => {});
    });
    // The session's end ends the link even when the subscription does not notice.
    const sessionEnded = session.ended.then((why) => {
      throw new MoqError("closed", `Session ended: ${why}`);
    });
    sessionEnded.catch(() => {});
    await Promise.race([sub.ready, timedOut, sessionEnded]);
    this.#info = sub.info;
    this.#ready = true;
    this.#opened(true);
    o.onReady(this);
    try {
      for await (const group of sub) {
        session.heard();
        o.onGroup(group, this);
      }
      return signal.aborted ? "closed" : "the publisher ended the track";
    } finally {
      sub.close();
    }
  }
}

/**
 * The refusal a subscription failed with, when its server's error code
 * named one, or when the server refused the session's upgrade (401, 403)
 * before MoQ began: that error's text names the URL, whose `jwt` must not
 * travel on in an error event, so only the status and the server's words do.
 */
function refusal(err: unknown): RefusedError | undefined {
  if (err instanceof QMuxConnectError && (err.status === 401 || err.status === 403)) {
    const words = /Refused with \d+: (.*)$/.exec(err.message)?.[1];
    return new RefusedError(
      "unauthorized",
      `The MoQ server refused the session with ${err.status}${words ? `: ${words}` : ""}`,
    );
  }
  if (!(err instanceof MoqError)) return undefined;
  if (err.code !== "unauthorized" && err.code !== "not_found") return undefined;
  return new RefusedError(err.code, err.message, { cause: err });
}
