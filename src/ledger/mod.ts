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
 * Reads page a track forward (`readAfter`) or backward (`readBefore`);
 * {@link entryStream} turns either into a Web-standard `ReadableStream`
 * that pages only as fast as its reader takes entries.
 *
 * @module
 */
export * from "../record/group_id.ts";
export * from "../record/track_path.ts";
export * from "./entry.ts";
export { withoutPayload } from "./codec.ts";
export * from "./errors.ts";
export type { LedgerBackend, TrackBackend } from "./backend.ts";
export * from "./entry_stream.ts";
export * from "./track_ledger.ts";
export * from "./ledger.ts";
export * from "./memory/memory_backend.ts";
export * from "../config/ledger_location.ts";
export * from "./open.ts";
export * from "./directory/directory_backend.ts";
// Types only: the PostgreSQL and S3 drivers load when openBackend opens such a
// ledger, so importing this module does not load them.
export type { PostgresBackend, PostgresOptions } from "./postgres/postgres_backend.ts";
export type { S3Backend, S3Options } from "./s3/s3_backend.ts";
export { STORAGE_DEADLINE_MS } from "./deadline.ts";
