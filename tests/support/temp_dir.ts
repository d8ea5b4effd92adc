// A scratch directory per test.

/** Runs `fn` with a fresh temporary directory and removes it afterwards, also when `fn` throws. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-test-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
