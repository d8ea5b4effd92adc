/**
 * Storage of funnel records: group identifiers, entries, the backend
 * contract and its implementations, and the per-track ledger that batches
 * commits.
 *
 * Backends, chosen by `LEDGER_URI` through {@link parseLedgerUri} and
 * {@link openBackend}: memory; a directory of checksummed, fsynced segment
 * files ({@link DirectoryBackend}); one PostgreSQL table
 * ({@link PostgresBackend}); one S3 object per committed batch
 * ({@link S3Backend}). Every one acknowledges an append only once it is
 * durable, takes a whole batch in one write, transaction or PUT, reads the
 * newest entry without scanning history, and deletes a redacted payload from
 * storage. A backend that cannot be reached throws `LedgerError("unavailable")`.
 *
 * A protocol layer over the ledger checks its writes where the commit order
 * is decided, through a {@link CommitGate}, and seals a track against other
 * writers ({@link EntryDraft.seal}); a refused draft rejects with
 * {@link CommitRefused}.
 *
 * Reads page a track forward (`readAfter`) or backward (`readBefore`);
 * {@link entryStream} turns either into a Web-standard `ReadableStream`
 * that pages only as fast as its reader takes entries.
 *
 * @module
 */
export * from "../record/mod.ts";
export * from "./entry.ts";
export { withoutPayload } from "./codec.ts";
export { STORAGE_DEADLINE_MS } from "./deadline.ts";
export * from "./errors.ts";
export type {
  CommitGate,
  CommitOutcome,
  DraftOutcome,
  LedgerBackend,
  LedgerEvents,
  RedactResult,
  TrackBackend,
} from "./backend.ts";
export {
  CommitFeed,
  type CommitInfo,
  type CommitReader,
  type FeedRead,
  MAX_QUEUED_ENTRIES,
  type SubscribeOptions,
  Subscription,
} from "./commit_feed.ts";
export {
  CommitFollower,
  type CommitFollowerOptions,
  FOLLOW_READ_DEADLINE_MS,
  FOLLOW_RETRY_MS,
  type ReadAfter,
} from "./commit_follower.ts";
export * from "./entry_stream.ts";
export * from "./track_ledger.ts";
export * from "./ledger.ts";
export * from "./retention.ts";
export * from "./retention_options.ts";
export * from "./entry_key.ts";
export * from "./memory/mod.ts";
export {
  describeLedgerLocation,
  type LedgerLocation,
  parseLedgerUri,
  type RetentionConfig,
  type RetentionPolicy,
  type RetentionRule,
  type StoreCredentials,
} from "../config/mod.ts";
export * from "./open.ts";
export {
  waitForBackend,
  type WaitForBackendOptions,
  type WaitingBackend,
} from "./waiting_backend.ts";
export * from "./directory/mod.ts";
// Types only: the PostgreSQL and S3 drivers load when openBackend opens such a
// ledger, so importing this module does not load them.
export type { PostgresBackend, PostgresOptions } from "./postgres/mod.ts";
export type { S3Backend, S3Options } from "./s3/mod.ts";

/** The PostgreSQL backend, loaded on first use: a program that never uses PostgreSQL never loads its driver. */
export function loadPostgresBackend(): Promise<typeof import("./postgres/mod.ts")> {
  return import("./postgres/mod.ts");
}

/** The S3 backend, loaded on first use: the AWS SDK is large. */
export function loadS3Backend(): Promise<typeof import("./s3/mod.ts")> {
  return import("./s3/mod.ts");
}
