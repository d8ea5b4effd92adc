// The funnel's own MoQ listener, running in a Worker so that delivering
// groups to many subscribers never competes with the HTTP commit path for
// the main thread. It keeps its own copy of the live tracks, fed in commit
// order by the main thread, and asks the main thread to check credentials
// (the one verifier and key source live there).
import { errorStack, errorText } from "../../../error_text/mod.ts";
import { parseTrackPatterns } from "../../../path/mod.ts";
import { AuthError, type Grant, ScopedGrant } from "../../../auth/mod.ts";
import type { LedgerEntry, TrackPath } from "../../../ledger/mod.ts";
import type { Logger, LogLevel } from "../../../log/mod.ts";
import type { CredentialCheck } from "./credential_check.ts";
import { type LiveListener, startLiveListener } from "./inline_listener.ts";
import { type EntryFetch, LivePublisher } from "../publisher.ts";
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

// FETCHes past the recent groups ask the main thread, which reads its ledger.
const fetches = new Map<number, (entry: LedgerEntry | undefined) => void>();
let nextFetch = 0;
let fetchFromLedger = false;
const fetchEntry: EntryFetch = (path, seq, signal) =>
  !fetchFromLedger || signal.aborted ? Promise.resolve(undefined) : new Promise((resolve) => {
    const id = nextFetch++;
    const done = (entry: LedgerEntry | undefined): void => {
      fetches.delete(id);
      signal.removeEventListener("abort", gone);
      resolve(entry);
    };
    // The subscriber's session ended: stop waiting; the late answer is dropped.
    const gone = (): void => done(undefined);
    fetches.set(id, done);
    signal.addEventListener("abort", gone, { once: true });
    post({ type: "fetch", id, track: { broadcast: path.broadcast, track: path.track }, seq });
  });

const publisher = new LivePublisher({
  cache: WORKER_TRACK_CACHE,
  onError: (error) => log.error("Publishing a committed record failed", error),
  fetchEntry,
});
// One path object per track, so the publisher's per-path cache keeps hitting.
const paths = new Map<string, TrackPath>();
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
          resolve(new ScopedGrant(g.scopes, g.expiresAt, g.sub, g.keyPrefix));
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
    case "entry":
      if (message.failed) log.debug(`Reading a record for a FETCH failed: ${message.failed}`);
      fetches.get(message.id)?.(message.entry);
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
    case "start":
      void start(message);
      return;
    case "stop":
      void stop();
      return;
  }
};
