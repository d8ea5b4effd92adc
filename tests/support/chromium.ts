/**
 * Headless Chromium for browser tests: Debian's `/usr/bin/chromium` driven by
 * `playwright-core` (no browser download). Tests pass `chromiumMissing` to
 * `ignoreWithout` (./requires.ts): they skip with a printed note when Chromium
 * is not installed, and fail the run instead with CI=true (`.ci/run` installs
 * it on fresh machines). They share one browser per test file.
 *
 * @example
 * ```ts
 * Deno.test({ name: "in the browser", ignore: ignoreWithout("Chromium", chromiumMissing), fn: async () => {
 *   const browser = await launchChromium();
 *   try {
 *     const page = await browser.context.newPage();
 *     // ...
 *   } finally {
 *     await browser.close();
 *   }
 * }});
 * ```
 */
import { chromium as playwright } from "playwright-core";
import type { BrowserContext } from "playwright-core";

/** Where Debian installs Chromium. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

function installed(): boolean {
  try {
    return Deno.statSync(CHROMIUM_PATH).isFile;
  } catch {
    return false;
  }
}

/**
 * Why the browser tests cannot run (undefined when Chromium is installed); a
 * note saying they skip is printed once.
 */
export const chromiumMissing: string | undefined = installed()
  ? undefined
  : `${CHROMIUM_PATH} not found`;
if (chromiumMissing !== undefined) {
  console.warn(
    `NOTE: ${CHROMIUM_PATH} not found: browser tests are SKIPPED (apt-get install -y chromium to run them)`,
  );
}

/** The flags every test browser runs with. */
export const CHROMIUM_FLAGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A launched browser with a fresh profile. */
export interface TestBrowser {
  /** The browser context (one fresh `--user-data-dir`). */
  readonly context: BrowserContext;
  /** Closes the browser and removes its profile directory. */
  close(): Promise<void>;
}

/** Launches headless Chromium with a fresh `--user-data-dir`. */
export async function launchChromium(extraArgs: readonly string[] = []): Promise<TestBrowser> {
  if (chromiumMissing !== undefined) {
    throw new Error(`Chromium is not installed at ${CHROMIUM_PATH}`);
  }
  const profile = await Deno.makeTempDir({ prefix: "sluice-chromium-" });
  // launchPersistentContext passes the profile as --user-data-dir.
  const context = await playwright.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [...CHROMIUM_FLAGS, ...extraArgs],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  };
}
