/**
 * The directory ledger backend: per track, append-only segment files of
 * CRC-framed batches.
 *
 * @module
 */

export { DirectoryBackend } from "./directory_backend.ts";
export { crc32 } from "./crc32.ts";
