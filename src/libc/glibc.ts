/**
 * The few glibc functions sluice calls through FFI: `malloc_trim` (giving
 * freed memory back after a burst of sessions), and `getsockname`,
 * `setsockopt` and `getsockopt` (finding the QUIC socket and sizing its
 * receive buffer, which Deno does not expose). Loaded once, only where the process may load libc: `--allow-ffi`
 * for every library or for exactly one of {@linkcode GLIBC_PATHS}, on Linux
 * with glibc.
 */

/**
 * Where glibc lives on the usual Linux layouts. The FFI permission can be
 * granted for exactly one of these (`--allow-ffi=/lib/x86_64-linux-gnu/libc.so.6`)
 * rather than for every library.
 */
export const GLIBC_PATHS: readonly string[] = [
  "/lib/x86_64-linux-gnu/libc.so.6",
  "/usr/lib/x86_64-linux-gnu/libc.so.6",
  "/lib/aarch64-linux-gnu/libc.so.6",
  "/usr/lib/aarch64-linux-gnu/libc.so.6",
  "/lib64/libc.so.6",
  "/usr/lib64/libc.so.6",
];

const SYMBOLS = {
  malloc_trim: { parameters: ["usize"], result: "i32" },
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
} as const;

/** The loaded glibc functions. */
export type Glibc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

let cached: Glibc | null | undefined;

/**
 * glibc's functions through FFI, or undefined when the process may not load
 * libc (no `--allow-ffi`, neither for all libraries nor for one of
 * {@link GLIBC_PATHS}), is not on Linux, or its libc is not glibc.
 */
export function glibc(): Glibc | undefined {
  if (cached !== undefined) return cached ?? undefined;
  cached = null;
  if (Deno.build.os !== "linux") return undefined;
  const granted = (path?: string) =>
    Deno.permissions.querySync(path ? { name: "ffi", path } : { name: "ffi" }).state === "granted";
  const library = granted() ? "libc.so.6" : GLIBC_PATHS.find((path) => granted(path));
  if (library === undefined) return undefined;
  try {
    cached = Deno.dlopen(library, SYMBOLS).symbols;
  } catch {
    // No glibc there (musl, or another layout): nothing to call.
  }
  return cached ?? undefined;
}
