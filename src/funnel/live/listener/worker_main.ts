// The funnel's own MoQ listener, running in a Worker so that delivering
// groups to many subscribers never competes with the HTTP commit path for
// the main thread. It keeps its own copy of the live tracks, fed in commit
// order by the main thread, and asks the main thread to check credentials
// (the one verifier and key source live there).
import { errorStack, errorText } from "../../../error_text/mod.ts";
import { parseTrackPatterns } from "../../../path/mod.ts";
import { AuthError, type Grant, ScopedGrant } from "../../../auth/mod.ts";
import type { LedgerEntry } from "../../../ledger/mod.ts";
import type { TrackPath } from "../../../path/mod.ts";
import type { Logger, LogLevel } from "../../../log/mod.ts";
import { MoqError } from "../../../moq/mod.ts";
import type { CredentialCheck } from "./credential_check.ts";
import { type LiveListener, startLiveListener } from "./inline_listener.ts";
import { type EntryFetch, LivePublisher, type TrackLookup } from "../publisher.ts";
import { LruCache } from "../../../cache/mod.ts";
import {
  type FromListener,
  type ToListener,
  type WireTrack,
  WORKER_TRACK_CACHE,
} from "./worker_messages.ts";

interface WorkerScope {
  postMessage(message: FromListener): void;
  onmessage: ((event: MessageEvent<ToListener>) => void) | null;
  close(): void;
}

const scope = self as unknown as WorkerScope;
const post = (message: FromListener): void => scope.postMessage(message);

const logAt = (level: LogLevel) => (message: string, error?: unknown): void => {
  const detail = error === undefined ? "" : `: ${errorStack(error)}`;
  post({ type: "log", level, message: message + detail });
};
const log: Logger = {
  error: logAt("error"),
  warn: logAt("warn"),
  info: logAt("info"),
  debug: logAt("debug"),
};

// FETCHes past the recent groups, and subscribers reading back what they fell behind
// on, ask the main thread, which reads its ledger.
type FetchAnswer = (entry: LedgerEntry | undefined, failed?: string, removed?: boolean) => void;
const fetches = new Map<number, FetchAnswer>();
let nextFetch = 0;
let fetchFromLedger = false;
const fetchEntry: EntryFetch = (path, seq, signal) =>
  // Without a ledger a record past the recent groups cannot be read: a failure, not "none".
  !fetchFromLedger
    ? Promise.reject(new Error("No ledger to read the record from"))
    : signal.aborted
    ? Promise.resolve(undefined)
    : new Promise((resolve, reject) => {
      const id = nextFetch++;
      const done: FetchAnswer = (entry, failed, removed) => {
        fetches.delete(id);
        signal.removeEventListener("abort", gone);
        // Removed by retention: the FETCH is refused as gone (MoqCode.Old), not as unknown.
        if (removed) reject(new MoqError("gone", `Record ${seq} was removed by retention`));
        // A failed read is not "no such record": the subscriber's skip over it is counted.
        else if (failed !== undefined) reject(new Error(failed));
        else resolve(entry);
      };
      // The subscriber's session ended: stop waiting; the late answer is dropped.
      const gone = (): void => done(undefined);
      fetches.set(id, done);
      signal.addEventListener("abort", gone, { once: true });
      post({ type: "fetch", id, track: { broadcast: path.broadcast, track: path.track }, seq });
    });

// A subscription to a track the worker closed (or never had) asks the main thread's ledger.
type LookupAnswer = (answer: { newest: LedgerEntry | undefined } | undefined | "too_many") => void;
const lookups = new Map<number, LookupAnswer>();
let nextLookup = 0;
let lookupInLedger = false;
const lookupTrack: TrackLookup = (path, asker) =>
  !lookupInLedger ? Promise.resolve(undefined) : new Promise((resolve) => {
    const id = nextLookup++;
    lookups.set(id, (answer) => {
      lookups.delete(id);
      resolve(answer);
    });
    const track = { broadcast: path.broadcast, track: path.track };
    post({ type: "lookup", id, track, ...(asker === undefined ? {} : { asker }) });
  });

// Made by "start", the first message, before any records arrive.
let publisher!: LivePublisher;
function makePublisher(maxTracks: number): LivePublisher {
  return new LivePublisher({
    cache: WORKER_TRACK_CACHE,
    onError: (error) => log.error("Publishing a committed record failed", error),
    fetchEntry,
    lookupTrack,
    maxTracks,
    onSkip: () => reportSkips(),
  });
}

// Skips are rare; those of one turn go to the main thread (and its metrics) as one message.
let skipsReported = false;
function reportSkips(): void {
  if (skipsReported) return;
  skipsReported = true;
  queueMicrotask(() => {
    skipsReported = false;
    post({ type: "skips", skips: publisher.skips, records: publisher.skippedRecords });
  });
}
// One path object per track, so the publisher's per-path cache keeps hitting; as many as the
// publisher keeps open (a path dropped here only costs that track a slower lookup).
let paths = new LruCache<string, TrackPath>(1);
const verifications = new Map<number, (answer: ToListener & { type: "verified" }) => void>();
let nextVerification = 0;
let listener: LiveListener | undefined;

/** Credentials are checked by the main thread's verifier; the grant is rebuilt here. */
const remoteCheck: CredentialCheck = {
  verify: (token) =>
    new Promise<Grant>((resolve, reject) => {
      const id = nextVerification++;
      verifications.set(id, (answer) => {
        if (answer.grant) {
          const g = answer.grant;
          // Expiry in this thread's clock, which the listener's lease measures by.
          const expiresAt = (Date.now() + g.msLeft) / 1000;
          resolve(new ScopedGrant(g.scopes, expiresAt, g.sub, g.keyPrefix));
        } else {
          const refusal = answer.refusal ?? { code: "malformed", message: "Not verified" };
          reject(new AuthError(refusal.code, refusal.message));
        }
      });
      post({ type: "verify", id, token });
    }),
};

function pathOf(track: WireTrack): TrackPath {
  const key = `${track.broadcast.join("/")}\u0000${track.track}`;
  let path = paths.get(key);
  if (!path) {
    path = { broadcast: track.broadcast, track: track.track };
    paths.set(key, path);
  }
  return path;
}

async function start(message: ToListener & { type: "start" }): Promise<void> {
  fetchFromLedger = message.fetchFromLedger;
  lookupInLedger = message.lookupInLedger;
  try {
    listener = await startLiveListener({
      hostname: message.hostname,
      port: message.port,
      certPem: message.certPem,
      keyPem: message.keyPem,
      publisher,
      verifier: message.checkCredentials ? remoteCheck : undefined,
      cors: message.corsAny ? { any: true } : { any: false, origins: new Set(message.corsOrigins) },
      log,
      maxGroupQueue: message.maxGroupQueue,
      ...(message.datagramTracks
        ? { datagramTracks: parseTrackPatterns(message.datagramTracks) }
        : {}),
      onSessions: (count) => post({ type: "sessions", count }),
    });
    post({ type: "listening", hostname: listener.addr.hostname, port: listener.addr.port });
  } catch (error) {
    post({ type: "failed", message: errorText(error) });
  }
}

async function stop(): Promise<void> {
  for (const done of [...fetches.values()]) done(undefined);
  for (const done of [...lookups.values()]) done(undefined);
  await listener?.stop();
  publisher.close();
  post({ type: "stopped" });
  scope.close();
}

scope.onmessage = (event) => {
  const message = event.data;
  switch (message.type) {
    case "records":
      for (const item of message.items) {
        const path = pathOf(item.track);
        if (item.created) publisher.trackCreated(path, item.entries[0]);
        else publisher.committed(path, item.entries);
      }
      post({ type: "applied" });
      return;
    case "stored":
      publisher.announceStored(message.broadcasts);
      return;
    case "entry":
      if (message.failed) log.debug(`Reading a record for a FETCH failed: ${message.failed}`);
      fetches.get(message.id)?.(message.entry, message.failed, message.gone);
      return;
    case "verified":
      verifications.get(message.id)?.(message);
      verifications.delete(message.id);
      return;
    case "subscribers":
      post({
        type: "subscribers",
        id: message.id,
        count: publisher.producer(message.broadcast, message.track)?.subscribers,
      });
      return;
    case "found":
      lookups.get(message.id)?.(
        message.tooMany ? "too_many" : message.exists ? { newest: message.newest } : undefined,
      );
      return;
    case "start":
      publisher = makePublisher(message.maxTracks);
      paths = new LruCache<string, TrackPath>(message.maxTracks);
      void start(message);
      return;
    case "stop":
      void stop();
      return;
  }
};
