/**
 * The PostgreSQL ledger backend: one row per entry. Loaded lazily
 * (`loadPostgresBackend`), so programs that never use it never load the driver.
 *
 * @module
 */

export { PostgresBackend, type PostgresOptions } from "./postgres_backend.ts";
