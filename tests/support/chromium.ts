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
import { fromPem, toBase64 } from "../../src/certs/mod.ts";

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

/**
 * The Chromium flag that makes it trust a certificate by its key, for TLS
 * that `serverCertificateHashes` does not cover (WebSocket, fetch):
 * `--ignore-certificate-errors-spki-list=<base64 SHA-256 of the
 * SubjectPublicKeyInfo>`, computed from the P-256 private key (PKCS#8 PEM).
 * Chromium honours it only with a `--user-data-dir`, which
 * {@linkcode launchChromium} always sets.
 */
export async function trustKeyFlag(keyPem: string): Promise<string> {
  const algorithm = { name: "ECDSA", namedCurve: "P-256" };
  const key = await crypto.subtle.importKey(
    "pkcs8",
    fromPem("PRIVATE KEY", keyPem),
    algorithm,
    true,
    [
      "sign",
    ],
  );
  // The public half of an EC private JWK is the same JWK without "d".
  const { d: _d, key_ops: _ops, ...publicJwk } = await crypto.subtle.exportKey("jwk", key);
  const pub = await crypto.subtle.importKey("jwk", publicJwk, algorithm, true, ["verify"]);
  const spki = await crypto.subtle.exportKey("spki", pub);
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", spki));
  return `--ignore-certificate-errors-spki-list=${toBase64(hash)}`;
}

/** A local page that loads a bundled script. */
export interface BundlePage {
  /** The page's origin, `http://127.0.0.1:<port>` (its `/` is the page). */
  readonly origin: string;
  /** Stops serving it. */
  stop(): Promise<void>;
}

/** A local page that loads @moq/net as the global `Moq`. */
export type MoqNetPage = BundlePage;

/**
 * Bundles `entry` (a module under tests/support/browser/) for the browser and
 * serves a page that loads it, from a plain-HTTP loopback origin.
 */
export async function serveBundlePage(entry: URL): Promise<BundlePage> {
  const bundle = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--platform", "browser", "--format", "esm", entry.pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!bundle.success) throw new Error(new TextDecoder().decode(bundle.stderr));
  const script = bundle.stdout;
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) =>
      new URL(req.url).pathname === "/bundle.js"
        ? new Response(script, { headers: { "content-type": "text/javascript" } })
        : new Response('<!doctype html><script type="module" src="/bundle.js"></script>', {
          headers: { "content-type": "text/html" },
        }),
  );
  return { origin: `http://127.0.0.1:${http.addr.port}`, stop: () => http.shutdown() };
}

/** Bundles @moq/net for the browser (tests/support/browser/moq_net_entry.ts) and serves it. */
export function serveMoqNetPage(): Promise<MoqNetPage> {
  return serveBundlePage(new URL("./browser/moq_net_entry.ts", import.meta.url));
}

/** Bundles sluice's client for the browser (tests/support/browser/client_entry.ts) and serves it. */
export function serveClientPage(): Promise<BundlePage> {
  return serveBundlePage(new URL("./browser/client_entry.ts", import.meta.url));
}

/**
 * Bundles moq-dev's media web components, `<moq-publish>` and `<moq-watch>`
 * (tests/support/browser/media_entry.ts), and serves a page that defines them.
 */
export function serveMediaPage(): Promise<BundlePage> {
  return serveBundlePage(new URL("./browser/media_entry.ts", import.meta.url));
}

/**
 * Chromium's stand-ins for a camera and a microphone (a test pattern and a
 * beep), granted without a prompt: what `<moq-publish source="camera">` captures.
 */
export const FAKE_MEDIA_FLAGS: readonly string[] = [
  "--use-fake-device-for-media-stream",
  "--use-fake-ui-for-media-stream",
  "--autoplay-policy=no-user-gesture-required",
];
