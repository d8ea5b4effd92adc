import { AuthError } from "../../../auth/mod.ts";
import type { TrackPatterns } from "../../../path/mod.ts";
import type { OriginPolicy } from "../../../http/mod.ts";
import type { LedgerEntry, TrackPath } from "../../../ledger/mod.ts";
import type { Logger } from "../../../log/mod.ts";
import type { RecordSink } from "../../sink.ts";
import type { CredentialCheck } from "./credential_check.ts";
import type { LiveListener } from "./inline_listener.ts";
import {
  type FromListener,
  type RecordItem,
  type ToListener,
  type WireTrack,
  WORKER_TRACK_CACHE,
} from "./worker_messages.ts";
import type { EntryFetch } from "../publisher.ts";
import { errorText } from "../../../error_text/mod.ts";

const NEVER = new AbortController().signal;

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
  /** Per-subscriber queue bound in groups (default 32). */
  readonly maxGroupQueue?: number;
  /** Tracks sent to subscribers as QUIC datagrams where they fit (default none). */
  readonly datagramTracks?: TrackPatterns;
  /** Reads entries for FETCHes the worker's recent groups miss (stays on this thread). */
  readonly fetchEntry?: EntryFetch;
}

/** The own MoQ listener running in a worker; it is fed as a {@linkcode RecordSink}. */
export interface WorkerListener extends LiveListener, RecordSink {
  /** Subscribers the listener serves on a track now (undefined: track unknown there). */
  subscribers(broadcast: string, track: string): Promise<number | undefined>;
}

/** How long stop() waits for the worker to close its sessions before terminating it. */
const STOP_GRACE_MS = 5000;

/**
 * Starts the funnel's own MoQ listener in a Worker: delivery to subscribers
 * runs on its own thread, so however many subscribers there are, they never
 * take the main thread from HTTP and commits. Committed records reach it
 * in commit order through this object's {@linkcode RecordSink} calls,
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
export function startWorkerListener(options: WorkerListenerOptions): Promise<WorkerListener> {
  const { log, verifier } = options;
  const worker = new Worker(new URL("./worker_main.ts", import.meta.url), { type: "module" });
  const send = (message: ToListener): void => worker.postMessage(message);
  let sessions = 0;
  let addr: Deno.NetAddr | undefined;
  let dead = false;
  let queued: RecordItem[] = [];
  let flushing = false;
  // Without subscribers, one records message in flight at a time: commits
  // gather while the worker applies the last batch, which keeps the HTTP path
  // cheap. With subscribers, every microtask checkpoint sends what it has, so
  // the worker never receives a burst it would have to skip its subscribers over.
  let inFlight = false;
  const counts = new Map<number, (count: number | undefined) => void>();
  let nextCount = 0;
  let stopped: (() => void) | undefined;
  let started!: { resolve: () => void; reject: (error: Error) => void };
  const starting = new Promise<void>((resolve, reject) => (started = { resolve, reject }));

  const checkCredential = async (id: number, token: string | undefined): Promise<void> => {
    try {
      const grant = await verifier!.verify(token);
      send({
        type: "verified",
        id,
        grant: {
          scopes: grant.scopes,
          expiresAt: grant.expiresAt,
          sub: grant.sub,
          keyPrefix: grant.keyPrefix,
        },
      });
    } catch (error) {
      if (!(error instanceof AuthError)) {
        log.error("Checking a subscriber credential failed", error);
      }
      const refusal = error instanceof AuthError
        ? { code: error.code, message: error.message }
        : { code: "malformed" as const, message: "The credential could not be checked" };
      send({ type: "verified", id, refusal });
    }
  };

  // FETCHes the worker cannot answer from its recent groups are read here, where the ledger is.
  const fetchFor = async (id: number, track: WireTrack, seq: number): Promise<void> => {
    let answer: ToListener & { type: "entry" };
    try {
      const path = { broadcast: track.broadcast, track: track.track };
      const entry = await options.fetchEntry?.(path, seq, NEVER);
      answer = entry ? { type: "entry", id, entry } : { type: "entry", id };
    } catch (error) {
      answer = { type: "entry", id, failed: errorText(error) };
    }
    if (!dead) send(answer);
  };

  worker.onmessage = (event: MessageEvent<FromListener>) => {
    const message = event.data;
    switch (message.type) {
      case "listening":
        addr = { transport: "udp", hostname: message.hostname, port: message.port };
        started.resolve();
        return;
      case "failed":
        started.reject(new Error(message.message));
        return;
      case "verify":
        void checkCredential(message.id, message.token);
        return;
      case "log":
        if (message.level === "error") log.error(message.message);
        else log[message.level](message.message);
        return;
      case "subscribers":
        counts.get(message.id)?.(message.count);
        counts.delete(message.id);
        return;
      case "fetch":
        void fetchFor(message.id, message.track, message.seq);
        return;
      case "sessions":
        sessions = message.count;
        return;
      case "applied":
        inFlight = false;
        if (queued.length > 0) flush();
        return;
      case "stopped":
        stopped?.();
        return;
    }
  };
  // A fault inside the worker ends the listener only, never the funnel.
  worker.onerror = (event) => {
    event.preventDefault();
    dead = true;
    sessions = 0;
    log.error(`The MoQ listener stopped after an internal fault: ${event.message}`);
    started.reject(new Error(event.message));
    stopped?.();
    for (const answer of counts.values()) answer(undefined);
    counts.clear();
  };

  const flush = (): void => {
    flushing = false;
    if (dead || (inFlight && sessions === 0) || queued.length === 0) return;
    const items = queued;
    queued = [];
    lastPath = undefined;
    lastEntries = undefined;
    inFlight = true;
    send({ type: "records", items });
  };
  // Consecutive commits of one track travel as one item: its path is copied once per batch.
  let lastPath: TrackPath | undefined;
  let lastEntries: LedgerEntry[] | undefined;
  const enqueue = (path: TrackPath, created: boolean, entries: readonly LedgerEntry[]): void => {
    if (dead) return;
    if (!created && path === lastPath && lastEntries && queued.length > 0) {
      for (const entry of entries) lastEntries.push(entry);
    } else {
      const copy = [...entries];
      queued.push({
        track: { broadcast: path.broadcast, track: path.track },
        created,
        entries: copy,
      });
      lastPath = created ? undefined : path;
      lastEntries = created ? undefined : copy;
    }
    if (!flushing && (!inFlight || sessions > 0)) {
      flushing = true;
      queueMicrotask(flush);
    }
  };

  send({
    type: "start",
    hostname: options.hostname,
    port: options.port,
    certPem: options.certPem,
    keyPem: options.keyPem,
    corsAny: options.cors.any,
    corsOrigins: options.cors.any ? [] : [...options.cors.origins],
    checkCredentials: verifier !== undefined,
    maxGroupQueue: options.maxGroupQueue ?? WORKER_TRACK_CACHE,
    datagramTracks: options.datagramTracks?.toString() ?? "",
    fetchFromLedger: options.fetchEntry !== undefined,
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    stopping ??= (async () => {
      if (!dead) {
        inFlight = false; // messages stay ordered: the worker applies these before stopping
        flush();
        const done = new Promise<void>((resolve) => (stopped = resolve));
        send({ type: "stop" });
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          done,
          new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS))),
        ]);
        clearTimeout(timer);
      }
      dead = true;
      worker.terminate();
    })();

  return starting.then(
    (): WorkerListener => ({
      get addr() {
        return addr!;
      },
      get sessions() {
        return sessions;
      },
      trackCreated: (path: TrackPath, newest: LedgerEntry | undefined) =>
        enqueue(path, true, newest ? [newest] : []),
      committed: (path: TrackPath, entries: readonly LedgerEntry[]) =>
        enqueue(path, false, entries),
      subscribers: (broadcast: string, track: string) =>
        dead ? Promise.resolve(undefined) : new Promise((resolve) => {
          const id = nextCount++;
          counts.set(id, resolve);
          send({ type: "subscribers", id, broadcast, track });
        }),
      stop,
    }),
    (error) => {
      dead = true;
      worker.terminate();
      throw error;
    },
  );
}
