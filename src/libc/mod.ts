/**
 * The C library through FFI: the few glibc functions sluice needs where Deno
 * offers no API (returning freed memory, sizing a socket's buffers).
 *
 * @module
 */
export { type Glibc, glibc, GLIBC_PATHS } from "./glibc.ts";
