// The messages between the funnel's main thread and its MoQ listener worker.
// Everything here survives structured cloning: plain objects, arrays,
// strings, numbers and bigints (ledger wallclocks).
import type { AuthErrorCode, Scope } from "../../../auth/mod.ts";
import type { LedgerEntry } from "../../../ledger/mod.ts";
import type { LogLevel } from "../../../log/mod.ts";

/**
 * Groups kept per track in the worker: more than the in-thread publisher's
 * 32, so a subscriber of a worker descheduled for a few tens of milliseconds
 * catches up from memory rather than reading back from the ledger.
 */
export const WORKER_TRACK_CACHE = 64;

/** A track as it crosses to the worker. */
export interface WireTrack {
  readonly broadcast: readonly string[];
  readonly track: string;
}

/** One commit-feed call, in commit order: a created track (entries: its newest, if any) or a commit. */
export interface RecordItem {
  readonly track: WireTrack;
  readonly created: boolean;
  readonly entries: readonly LedgerEntry[];
}

/** What a verified credential grants, rebuilt as a grant in the worker. */
export interface WireGrant {
  readonly scopes: readonly Scope[];
  /** Milliseconds until the credential expires, by the main thread's clock (workers have their own). */
  readonly msLeft: number;
  readonly sub: string | undefined;
  readonly keyPrefix: string | undefined;
}

/** Main thread → worker. */
export type ToListener =
  | {
    readonly type: "start";
    readonly hostname: string;
    readonly port: number;
    readonly certPem: string;
    readonly keyPem: string;
    readonly corsAny: boolean;
    readonly corsOrigins: readonly string[];
    /** False when no key set is configured: every subscriber is admitted. */
    readonly checkCredentials: boolean;
    readonly maxGroupQueue: number;
    /** FUNNEL_DATAGRAM_TRACKS as written back by `TrackPatterns.toString` ("" for none). */
    readonly datagramTracks: string;
    /** True when FETCHes past the recent groups may ask the main thread's ledger. */
    readonly fetchFromLedger: boolean;
    /** True when a subscription to a track the worker closed may ask the main thread's ledger. */
    readonly lookupInLedger: boolean;
    /** Tracks the worker keeps open at most. */
    readonly maxTracks: number;
  }
  | { readonly type: "records"; readonly items: readonly RecordItem[] }
  /** Broadcasts of tracks stored before the start, to announce (their tracks open when named). */
  | { readonly type: "stored"; readonly broadcasts: readonly string[] }
  | {
    readonly type: "verified";
    readonly id: number;
    readonly grant?: WireGrant;
    readonly refusal?: { readonly code: AuthErrorCode; readonly message: string };
  }
  | {
    readonly type: "subscribers";
    readonly id: number;
    readonly broadcast: string;
    readonly track: string;
  }
  /** The answer to a "fetch": the entry, none (no such record), or that reading failed. */
  | {
    readonly type: "entry";
    readonly id: number;
    readonly entry?: LedgerEntry;
    readonly failed?: string;
    /** True when retention removed the record: the FETCH is refused as gone. */
    readonly gone?: boolean;
  }
  /**
   * The answer to a "lookup": whether the track exists, and its newest entry;
   * `tooMany` when the session's budget of storage lookups was spent.
   */
  | {
    readonly type: "found";
    readonly id: number;
    readonly exists: boolean;
    readonly newest?: LedgerEntry;
    readonly tooMany?: true;
  }
  | { readonly type: "stop" };

/** Worker → main thread. */
export type FromListener =
  | { readonly type: "listening"; readonly hostname: string; readonly port: number }
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "verify"; readonly id: number; readonly token: string | undefined }
  | { readonly type: "log"; readonly level: LogLevel; readonly message: string }
  | { readonly type: "subscribers"; readonly id: number; readonly count: number | undefined }
  | { readonly type: "sessions"; readonly count: number }
  /** A FETCH missed the worker's recent groups: read entry `seq` of the track from the ledger. */
  | { readonly type: "fetch"; readonly id: number; readonly track: WireTrack; readonly seq: number }
  /**
   * A subscription named a track the worker does not hold open: does it
   * exist? A storage query is charged to `asker`, the session's key.
   */
  | {
    readonly type: "lookup";
    readonly id: number;
    readonly track: WireTrack;
    readonly asker?: string;
  }
  /** Subscribers skipped ahead so far, slower than their track, and the records they passed. */
  | { readonly type: "skips"; readonly skips: number; readonly records: number }
  /** A records message was applied; the next one may be sent. */
  | { readonly type: "applied" }
  | { readonly type: "stopped" };
