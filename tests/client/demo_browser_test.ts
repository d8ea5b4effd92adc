// The chat demo (`deno task demo`, run as its own process) in headless
// Chromium: the bundled client over the browser's own WebTransport, and in
// a page without WebTransport over QMux on the browser's WebSocket.
// Set SLUICE_DEMO_SCREENSHOT=docs/demo.png to write the README's picture.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { testCertificateFiles } from "../support/certs.ts";
import { chromiumMissing, launchChromium, trustKeyFlag } from "../support/chromium.ts";
import { ignoreWithout } from "../support/requires.ts";
import { until } from "../support/wait.ts";

const SERVE = fileURLToPath(new URL("../../demo/serve.ts", import.meta.url));

interface Demo {
  readonly url: string;
  readonly lines: string[];
  /** The Chromium flag that trusts the demo's certificate for WebSocket (TLS without pinning). */
  readonly trust: string;
  stop(): Promise<void>;
}

async function startDemo(): Promise<Demo> {
  // The test certificate, so the browser can be told to trust it for wss:// too.
  const files = await testCertificateFiles();
  const cwd = files.dir;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVE],
    cwd,
    env: {
      DEMO_ADDR: "127.0.0.1:0",
      FUNNEL_ADDR: "127.0.0.1:0",
      FUNNEL_SERVE_ADDR: "127.0.0.1:0",
      CERT_FILE: files.cert,
      KEY_FILE: files.key,
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const collect = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
      lines.push(...chunk.split("\n"));
    }
  };
  const done = Promise.all([collect(child.stdout), collect(child.stderr)]);
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await child.status;
    await done;
    await Deno.remove(cwd, { recursive: true });
  };
  try {
    await until(
      () => lines.some((l) => l.startsWith("Demo: open") || /error/i.test(l)),
      "the demo",
    );
    const url = /Demo: open (\S+)/.exec(lines.join("\n"))?.[1];
    assert.ok(url, lines.join("\n"));
    return { url, lines, stop, trust: await trustKeyFlag(await Deno.readTextFile(files.key)) };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Types a message into the page's form and sends it; returns the page's clock at the send. */
function send(page: Page, text: string): Promise<number> {
  return page.evaluate((text) => {
    // deno-lint-ignore no-explicit-any
    const document = (globalThis as any).document;
    document.querySelector("#text").value = text;
    const at = Date.now();
    document.querySelector("#send").requestSubmit();
    return at;
  }, text);
}

/** When the page showed the message with `text` (its clock), once it does. */
async function shown(page: Page, text: string): Promise<number> {
  const li = page.locator("#log li", { hasText: text });
  await li.waitFor();
  return Number(await li.getAttribute("data-received-at"));
}

const texts = (page: Page) => page.locator("#log li .text").allTextContents();

Deno.test({
  name:
    "the chat demo in two Chromium pages: posts appear in the other tab, reload shows history, a redaction disappears from both",
  ignore: ignoreWithout("Chromium", chromiumMissing),
  sanitizeOps: false, // playwright's driver keeps internal timers and pipes
  sanitizeResources: false,
  fn: async () => {
    const demo = await startDemo();
    const browser = await launchChromium([demo.trust]);
    try {
      const loaded: string[] = [];
      const open = async (withoutWebTransport = false) => {
        const page = await browser.context.newPage();
        if (withoutWebTransport) {
          // deno-lint-ignore no-explicit-any
          await page.addInitScript(() => delete (globalThis as any).WebTransport);
        }
        page.on("request", (r) => loaded.push(new URL(r.url()).pathname));
        page.on("pageerror", (e) => console.error(`page error: ${e.message}`));
        await page.goto(demo.url);
        await page.locator("#state.live").waitFor();
        return page;
      };
      const alice = await open();
      await alice.fill("#name", "alice");
      const bob = await open();
      await bob.fill("#name", "bob");
      assert.equal(await alice.locator("#state").getAttribute("data-transport"), "webtransport");

      const delays: number[] = [];
      for (let i = 0; i < 10; i++) {
        const from = i % 2 === 0 ? alice : bob;
        const to = i % 2 === 0 ? bob : alice;
        const text = `message ${i} from ${i % 2 === 0 ? "alice" : "bob"}`;
        const sentAt = await send(from, text);
        delays.push((await shown(to, text)) - sentAt);
        await shown(from, text);
      }
      delays.sort((a, b) => a - b);
      console.log(
        `post in one tab → shown in the other: median ${delays[5]} ms, max ${
          delays[9]
        } ms (10 messages)`,
      );

      // A reload reads the same messages back from the ledger, in order.
      await bob.reload();
      await bob.locator("#state.live").waitFor();
      await until(async () => (await texts(bob)).length === 10, "history after reload");
      assert.deepEqual(await texts(bob), await texts(alice));

      // × in one tab redacts the message: it disappears from both.
      await alice.locator("#log li", { hasText: "message 3 from bob" }).locator("button").click();
      await alice.locator("#log li", { hasText: "message 3 from bob" }).waitFor({
        state: "detached",
      });
      await bob.locator("#log li", { hasText: "message 3 from bob" }).waitFor({
        state: "detached",
      });
      assert.equal((await texts(bob)).length, 9);

      // A browser without WebTransport takes the WebSocket on the same port, and misses nothing.
      const carol = await open(true);
      await carol.fill("#name", "carol");
      assert.equal(await carol.locator("#state").getAttribute("data-transport"), "websocket");
      await until(async () => (await texts(carol)).length === 9, "carol's history");
      const viaWebSocket: number[] = [];
      for (let i = 0; i < 4; i++) {
        const [from, to] = i % 2 === 0 ? [carol, alice] : [alice, carol];
        const text = `over websocket ${i}`;
        const sentAt = await send(from, text);
        viaWebSocket.push((await shown(to, text)) - sentAt);
      }
      console.log(`with one tab on WebSocket: ${viaWebSocket.join(", ")} ms`);
      assert.deepEqual(await texts(carol), await texts(alice));

      // The browser ran the bundle without its Deno-only chunk.
      assert.ok(loaded.includes("/js/app.js"));
      assert.deepEqual(loaded.filter((p) => p.includes("deno_dial")), []);

      const screenshot = Deno.env.get("SLUICE_DEMO_SCREENSHOT");
      if (screenshot) {
        await send(alice, "the ledger keeps every message; the feed has no gaps");
        await shown(bob, "the ledger keeps every message");
        await alice.setViewportSize({ width: 760, height: 560 });
        await alice.screenshot({ path: screenshot });
      }
    } finally {
      await browser.close();
      await demo.stop();
    }
  },
});
