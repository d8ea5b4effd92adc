import type { TrackPatterns } from "../../../path/mod.ts";
import type { OriginPolicy } from "../../../http/mod.ts";
import type { CommitReader, LedgerEntry } from "../../../ledger/mod.ts";
import { broadcastName, type TrackPath } from "../../../path/mod.ts";
import type { Logger } from "../../../log/mod.ts";
import type { CredentialCheck } from "./credential_check.ts";
import type { LiveListener } from "./inline_listener.ts";
import { type FromListener, type ToListener, WORKER_TRACK_CACHE } from "./worker_messages.ts";
import type { EntryFetch, TrackLookup } from "../publisher.ts";
import { MAX_LIVE_TRACKS } from "../live_tracks.ts";
import { withDeadline } from "../../../timers/mod.ts";
import { RecordBatches } from "./record_batches.ts";
import { answerCredential, answerFetch, answerLookup } from "./worker_requests.ts";

/** Options of {@linkcode startWorkerListener}. */
export interface WorkerListenerOptions {
  /** Interface to bind. */
  readonly hostname: string;
  /** UDP port (0 picks one). */
  readonly port: number;
  /** Certificate, PEM. */
  readonly certPem: string;
  /** Private key, PEM. */
  readonly keyPem: string;
  /** Credential verifier (stays on this thread); undefined admits every subscriber. */
  readonly verifier: CredentialCheck | undefined;
  /** CORS_ALLOWED_ORIGINS, applied to WebTransport's Origin. */
  readonly cors: OriginPolicy;
  /** Where the worker's log lines go. */
  readonly log: Logger;
  /**
   * Per-subscriber queue bound in groups (default 32) of tracks that are not
   * flow controlled; record tracks are, so no subscriber of theirs is skipped for it.
   */
  readonly maxGroupQueue?: number;
  /** Tracks sent to subscribers as QUIC datagrams where they fit (default none). */
  readonly datagramTracks?: TrackPatterns;
  /** Reads entries for FETCHes the worker's recent groups miss (stays on this thread). */
  readonly fetchEntry?: EntryFetch;
  /**
   * Whether a track exists (stays on this thread): the worker keeps at most
   * {@linkcode MAX_LIVE_TRACKS} open and asks for one it closed when a
   * subscriber names it.
   */
  readonly lookupTrack?: TrackLookup;
  /** Tracks the worker keeps open at most (default {@linkcode MAX_LIVE_TRACKS}). */
  readonly maxTracks?: number;
  /** Wall clock in ms that credential expiry is measured by (default Date.now). */
  readonly now?: () => number;
}

/** The own MoQ listener running in a worker; it reads the ledger's commits. */
export interface WorkerListener extends LiveListener, CommitReader {
  /**
   * A track exists: the worker creates it (and publishes `newest`). Held
   * back as {@linkcode committed} is: a creation counts as one entry.
   */
  trackCreated(path: TrackPath, newest: LedgerEntry | undefined): void | Promise<void>;
  /**
   * Committed entries of one track, oldest first, for the worker to publish.
   * Returns a promise while more than {@link LISTENER_BACKLOG} entries wait
   * for the worker, settled once it has applied enough of them: the ledger's
   * commit feed then holds this reader back (and, past its own bound, reads
   * the rest back from the ledger), so a worker that falls behind, or stops
   * applying, never piles up batches or messages without bound.
   */
  committed(path: TrackPath, entries: readonly LedgerEntry[]): void | Promise<void>;
  /**
   * Tracks stored before the start: the worker announces their broadcasts
   * and opens a track (asking `lookupTrack`) when a subscriber names it.
   */
  tracksStored(paths: readonly TrackPath[]): void;
  /** Entries (a creation counts as one) sent or queued for the worker and not yet applied. */
  readonly backlog: number;
  /** Subscribers the listener serves on a track now (undefined: track unknown there). */
  subscribers(broadcast: string, track: string): Promise<number | undefined>;
  /** Times a subscriber of the listener was slower than its track and skipped ahead. */
  readonly skips: number;
  /** Records the listener's subscribers did not receive because they skipped ahead. */
  readonly skippedRecords: number;
}

/** Entries sent to the worker (or about to be) and not yet applied, past which it holds back. */
export const LISTENER_BACKLOG = 4096;

/** How long stop() waits for the worker to close its sessions before terminating it. */
const STOP_GRACE_MS = 5000;

/**
 * Starts the funnel's own MoQ listener in a Worker: delivery to subscribers
 * runs on its own thread, so however many subscribers there are, they never
 * take the main thread from HTTP and commits. Committed records reach it
 * in commit order through this object's {@linkcode CommitReader} calls,
 * batched while the worker applies the previous batch. Credentials are checked here, with the
 * funnel's one verifier.
 *
 * @example
 * ```ts
 * const listener = await startWorkerListener({ hostname: "0.0.0.0", port: 4433, certPem,
 *   keyPem, verifier: undefined, cors: SAME_ORIGIN_ONLY, log });
 * listener.committed(path, entries);
 * await listener.stop();
 * ```
 */
export async function startWorkerListener(
  options: WorkerListenerOptions,
): Promise<WorkerListener> {
  const host = new WorkerListenerHost(options);
  try {
    await host.started;
  } catch (error) {
    host.terminate();
    throw error;
  }
  return host;
}

/** The main thread's side of the worker: what it is sent, and what it asks for. */
class WorkerListenerHost implements WorkerListener {
  /** Settles once the worker listens, or failed to. */
  readonly started: Promise<void>;
  readonly #options: WorkerListenerOptions;
  readonly #worker: Worker;
  #sessions = 0;
  #skips = 0;
  #skippedRecords = 0;
  #addr: Deno.NetAddr | undefined;
  #dead = false;
  readonly #batches = new RecordBatches();
  #flushing = false;
  // Without subscribers, one records message in flight at a time: commits
  // gather while the worker applies the last batch, which keeps the HTTP path
  // cheap. With subscribers, every microtask checkpoint sends what it has, so
  // the worker never receives a burst it would have to skip its subscribers over.
  #inFlight = false;
  // Entries queued or sent and not yet applied, and those of each message sent, oldest first.
  #backlog = 0;
  readonly #sent: number[] = [];
  #caughtUp: PromiseWithResolvers<void> | undefined;
  readonly #counts = new Map<number, (count: number | undefined) => void>();
  #nextCount = 0;
  #stopped: (() => void) | undefined;
  #stopping: Promise<void> | undefined;
  #started!: { resolve: () => void; reject: (error: Error) => void };

  constructor(options: WorkerListenerOptions) {
    this.#options = options;
    this.started = new Promise<void>((resolve, reject) => (this.#started = { resolve, reject }));
    this.#worker = new Worker(new URL("./worker_main.ts", import.meta.url), { type: "module" });
    this.#worker.onmessage = (event: MessageEvent<FromListener>) => this.#received(event.data);
    // A fault inside the worker ends the listener only, never the funnel.
    this.#worker.onerror = (event) => {
      event.preventDefault();
      this.#died(event.message);
    };
    this.#send(startMessage(options));
  }

  get addr(): Deno.NetAddr {
    return this.#addr!;
  }

  get sessions(): number {
    return this.#sessions;
  }

  get skips(): number {
    return this.#skips;
  }

  get skippedRecords(): number {
    return this.#skippedRecords;
  }

  trackCreated(path: TrackPath, newest: LedgerEntry | undefined): void | Promise<void> {
    this.#enqueue(path, true, newest ? [newest] : []);
    return this.#holdBack();
  }

  committed(path: TrackPath, entries: readonly LedgerEntry[]): void | Promise<void> {
    this.#enqueue(path, false, entries);
    return this.#holdBack();
  }

  tracksStored(paths: readonly TrackPath[]): void {
    // One message of distinct broadcast names: a restart may list 100,000 tracks of a few.
    if (!this.#dead) {
      this.#send({ type: "stored", broadcasts: [...new Set(paths.map(broadcastName))] });
    }
  }

  /** Entries (a track's creation counts as one) queued or sent and not yet applied. */
  get backlog(): number {
    return this.#backlog;
  }

  subscribers(broadcast: string, track: string): Promise<number | undefined> {
    if (this.#dead) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const id = this.#nextCount++;
      this.#counts.set(id, resolve);
      this.#send({ type: "subscribers", id, broadcast, track });
    });
  }

  stop(): Promise<void> {
    return this.#stopping ??= this.#stop();
  }

  /** Ends the worker at once. */
  terminate(): void {
    this.#dead = true;
    this.#worker.terminate();
    this.#release();
  }

  async #stop(): Promise<void> {
    if (!this.#dead) {
      this.#inFlight = false; // messages stay ordered: the worker applies these before stopping
      this.#flush();
      const done = new Promise<void>((resolve) => (this.#stopped = resolve));
      this.#send({ type: "stop" });
      await withDeadline(done, STOP_GRACE_MS, () => new Error("stop grace")).catch(() => {});
    }
    this.terminate();
  }

  #send(message: ToListener): void {
    this.#worker.postMessage(message);
  }

  #answer(answer: Promise<ToListener>): void {
    void answer.then((message) => {
      if (!this.#dead) this.#send(message);
    });
  }

  #received(message: FromListener): void {
    switch (message.type) {
      case "listening":
        this.#addr = { transport: "udp", hostname: message.hostname, port: message.port };
        this.#started.resolve();
        return;
      case "failed":
        this.#started.reject(new Error(message.message));
        return;
      case "verify":
        this.#answer(
          answerCredential(
            this.#options.verifier!,
            this.#options.log,
            message.id,
            message.token,
            this.#options.now ?? Date.now,
          ),
        );
        return;
      case "log":
        if (message.level === "error") this.#options.log.error(message.message);
        else this.#options.log[message.level](message.message);
        return;
      case "subscribers":
        this.#counts.get(message.id)?.(message.count);
        this.#counts.delete(message.id);
        return;
      case "fetch":
        this.#answer(answerFetch(this.#options.fetchEntry, message.id, message.track, message.seq));
        return;
      case "lookup":
        this.#answer(
          answerLookup(
            this.#options.lookupTrack,
            this.#options.log,
            message.id,
            message.track,
            message.asker,
          ),
        );
        return;
      case "sessions":
        this.#sessions = message.count;
        return;
      case "skips":
        this.#skips = message.skips;
        this.#skippedRecords = message.records;
        return;
      case "applied":
        this.#inFlight = false;
        this.#backlog -= this.#sent.shift() ?? 0;
        if (this.#backlog <= LISTENER_BACKLOG / 2) this.#release();
        if (!this.#batches.empty) this.#flush();
        return;
      case "stopped":
        this.#stopped?.();
        return;
    }
  }

  #died(reason: string): void {
    this.#dead = true;
    this.#sessions = 0;
    this.#options.log.error(`The MoQ listener stopped after an internal fault: ${reason}`);
    this.#started.reject(new Error(reason));
    this.#stopped?.();
    this.#release();
    for (const answer of this.#counts.values()) answer(undefined);
    this.#counts.clear();
  }

  #enqueue(path: TrackPath, created: boolean, entries: readonly LedgerEntry[]): void {
    if (this.#dead) return;
    this.#batches.add(path, created, entries);
    this.#backlog += Math.max(1, entries.length);
    if (!this.#flushing && (!this.#inFlight || this.#sessions > 0)) {
      this.#flushing = true;
      queueMicrotask(() => this.#flush());
    }
  }

  #flush(): void {
    this.#flushing = false;
    if (this.#dead || (this.#inFlight && this.#sessions === 0) || this.#batches.empty) return;
    this.#inFlight = true;
    const items = this.#batches.take();
    this.#sent.push(items.reduce((n, item) => n + Math.max(1, item.entries.length), 0));
    this.#send({ type: "records", items });
  }

  // Past the bound the reader waits (restored tracks and PUTs too, not only commits): the
  // batches hold at most LISTENER_BACKLOG entries plus the call that crossed it.
  #holdBack(): void | Promise<void> {
    if (this.#backlog <= LISTENER_BACKLOG || this.#dead) return;
    return (this.#caughtUp ??= Promise.withResolvers()).promise;
  }

  // The worker caught up (or is gone): a reader held back goes on.
  #release(): void {
    this.#caughtUp?.resolve();
    this.#caughtUp = undefined;
  }
}

/** The worker's first message: where to listen and how to serve. */
function startMessage(options: WorkerListenerOptions): ToListener {
  return {
    type: "start",
    hostname: options.hostname,
    port: options.port,
    certPem: options.certPem,
    keyPem: options.keyPem,
    corsAny: options.cors.any,
    corsOrigins: options.cors.any ? [] : [...options.cors.origins],
    checkCredentials: options.verifier !== undefined,
    maxGroupQueue: options.maxGroupQueue ?? WORKER_TRACK_CACHE,
    datagramTracks: options.datagramTracks?.toString() ?? "",
    fetchFromLedger: options.fetchEntry !== undefined,
    lookupInLedger: options.lookupTrack !== undefined,
    maxTracks: options.maxTracks ?? MAX_LIVE_TRACKS,
  };
}
