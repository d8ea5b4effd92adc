/**
 * The directory ledger backend: per track, append-only segment files of
 * CRC-framed batches.
 *
 * @module
 */

export { DirectoryBackend, type DirectoryOptions, OPEN_TRACKS } from "./directory_backend.ts";
export { crc32 } from "./crc32.ts";
export { foldsCase } from "./case_probe.ts";
