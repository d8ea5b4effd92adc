/**
 * The in-memory ledger backend: for tests and the embedded default.
 *
 * @module
 */

export { MemoryBackend } from "./memory_backend.ts";
