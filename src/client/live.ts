/**
 * One live link: a MoQ session to the relay or the funnel's listener and
 * one subscription to the track, watched by a liveness probe. The feed
 * replaces a link that ends (reconnect) or whose credential is due (renew).
 */
import { connect, MoqCode, type MoqSession, type ReceivedGroup, VERSIONS } from "../moq/mod.ts";
import type { TrackInfo } from "../moq/mod.ts";
import { errorText } from "../error_text/mod.ts";
import { sleep, type Timers } from "../timers/mod.ts";
import type { CertificateHash, Dialer } from "./dial.ts";

/**
 * How long a link may hear nothing before it asks the server for the
 * track's properties (lite-05 TRACK), and how long an answer may take: a
 * server that vanished without closing (killed, or the path died) is
 * noticed within about five seconds, on every transport, without waiting
 * for an idle timeout. A link that receives groups sends no probes.
 */
export const PROBE_INTERVAL_MS = 1_500;
/** How long a probe may go unanswered before the link is given up, ms. */
export const PROBE_TIMEOUT_MS = 3_000;
/** How long dialing and subscribing may take before the attempt is given up, ms. */
const SETUP_TIMEOUT_MS = 10_000;

/** What a link needs. */
export interface LinkOptions {
  /** Where to dial, with the current credential in its `jwt` parameter. */
  readonly url: () => Promise<URL>;
  /** Opens the transport session. */
  readonly dial: Dialer;
  /** The probe's timers. */
  readonly timers: Timers;
  /** Development certificates to accept by hash. */
  readonly serverCertificateHashes?: readonly CertificateHash[];
  /** Extra PEM roots to trust (Deno). */
  readonly caCerts?: readonly string[];
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

/** A MoQ session with one subscription; `ended` resolves (never rejects) with why it ended. */
export class LiveLink {
  /** Resolves with a reason once the link is over. */
  readonly ended: Promise<string>;
  /** Resolves true once the subscription is accepted, false if the link ended first. */
  readonly opened: Promise<boolean>;
  /**
   * Resolves with whichever comes first: the link ended, or the server asked
   * it to go away (GOAWAY, with the URI to move to, possibly empty).
   */
  readonly settled: Promise<{ readonly ended: string } | { readonly goaway: string }>;
  readonly #abort = new AbortController();
  #moq: MoqSession | undefined;
  #info: TrackInfo | undefined;
  #drops: () => ReadonlyArray<readonly [number, number]> = () => [];
  #ready = false;
  #heardAt = 0;
  #opened!: (ready: boolean) => void;
  #goaway!: (uri: string) => void;

  /** Starts dialing at once. */
  constructor(options: LinkOptions) {
    this.opened = new Promise((resolve) => this.#opened = resolve);
    const goaway = new Promise<string>((resolve) => this.#goaway = resolve);
    this.ended = this.#run(options).then(
      (reason) => reason,
      (err) => errorText(err),
    ).finally(() => {
      this.close();
      this.#opened(false);
    });
    this.settled = Promise.race([
      this.ended.then((ended) => ({ ended })),
      goaway.then((uri) => ({ goaway: uri })),
    ]);
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

  /** The transport the link's session runs on, once dialed. */
  get transport(): string | undefined {
    return this.#moq?.transport.transport;
  }

  /** MoQ ranges (inclusive) the publisher said it will never deliver. */
  get drops(): ReadonlyArray<readonly [number, number]> {
    return this.#drops();
  }

  /** Fetches one group over this link (lite-05); rejects when it is not available. */
  fetch(broadcast: string, name: string, sequence: number): Promise<ReceivedGroup> {
    const moq = this.#moq;
    if (!moq || moq.version !== "moq-lite-05") {
      return Promise.reject(new Error("No lite-05 session to fetch over"));
    }
    return moq.fetch(broadcast, name, sequence, {
      signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]),
    });
  }

  /** Ends the link (idempotent). */
  close(): void {
    this.#abort.abort();
    this.#moq?.close(MoqCode.None, "closed");
  }

  async #run(o: LinkOptions): Promise<string> {
    const signal = this.#abort.signal;
    const setup = AbortSignal.any([signal, AbortSignal.timeout(SETUP_TIMEOUT_MS)]);
    const session = await o.dial(await o.url(), {
      protocols: VERSIONS,
      ...(o.serverCertificateHashes ? { serverCertificateHashes: o.serverCertificateHashes } : {}),
      ...(o.caCerts ? { caCerts: o.caCerts } : {}),
      signal: setup,
    });
    if (signal.aborted) {
      session.close(MoqCode.None, "closed");
      return "closed";
    }
    const moq = await connect(session, { signal });
    this.#moq = moq;
    moq.goaway.then(this.#goaway);
    const sub = moq.subscribe(o.broadcast, o.name, { start: o.start, queueLimit: 4096 });
    this.#drops = () => sub.drops;
    const timedOut = new Promise<never>((_, reject) => {
      const onTimeout = () => reject(new Error("the subscription was not accepted in time"));
      setup.addEventListener("abort", onTimeout, { once: true });
      sub.ready.finally(() => setup.removeEventListener("abort", onTimeout)).catch(() => {});
    });
    await Promise.race([sub.ready, timedOut]);
    this.#info = sub.info;
    this.#ready = true;
    this.#opened(true);
    o.onReady(this);
    const probing = moq.version === "moq-lite-05" ? this.#probe(moq, o) : undefined;
    try {
      for await (const group of sub) {
        this.#heardAt = Date.now();
        o.onGroup(group, this);
      }
      return signal.aborted ? "closed" : "the publisher ended the track";
    } finally {
      this.#abort.abort();
      await probing;
    }
  }

  // A TRACK request after each quiet interval: an answer proves the server and the path still work.
  async #probe(moq: MoqSession, o: LinkOptions): Promise<void> {
    const signal = this.#abort.signal;
    this.#heardAt = Date.now();
    while (!signal.aborted) {
      await sleep(this.#heardAt + PROBE_INTERVAL_MS - Date.now(), signal, o.timers);
      if (signal.aborted) return;
      if (Date.now() - this.#heardAt < PROBE_INTERVAL_MS) continue; // groups arrived meanwhile
      let timer: unknown;
      const answered = await Promise.race([
        moq.trackInfo(o.broadcast, o.name).then(() => true, () => false),
        new Promise<false>((resolve) => {
          timer = o.timers.setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
        }),
      ]);
      o.timers.clearTimeout(timer);
      if (!answered && !signal.aborted) {
        moq.close(MoqCode.Transport, "no answer from the server");
        return;
      }
      this.#heardAt = Date.now();
    }
  }
}
