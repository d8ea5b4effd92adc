/**
 * The error vocabulary: {@link SluiceError}, the base of every error sluice
 * throws for callers, with a stable snake_case `code` from one table
 * ({@link ERROR_CODES}), and the classes for a client's errors. This module
 * imports nothing else, so every layer can use it. Turning an error into an
 * HTTP answer is `http/`'s `errorResponse`.
 *
 * @module
 */
export * from "./codes.ts";
export * from "./sluice_error.ts";
