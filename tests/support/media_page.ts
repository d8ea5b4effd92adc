// moq-dev's media players in a headless Chromium page: <moq-publish> fed by Chromium's fake
// camera and microphone, and <moq-watch> playing a broadcast, each connected to a relay over
// WebTransport (the relay's certificate pinned by hash, as Chromium's QUIC needs) or WebSocket
// (WebTransport removed from the page, as in a browser without it). What a test reads from a
// watcher: the catalog, video frames decoded and audio samples decoded, from the player's own
// statistics (`video.out.stats`, `audio.out.stats` of @moq/watch 0.4).
import type { BrowserContext, Page } from "playwright-core";
import { errorText } from "../../src/error_text/mod.ts";
import type { PageTransport } from "./moq_net_page.ts";
import { until } from "./wait.ts";

/** What a `<moq-watch>` reports at one moment. */
export interface WatchStats {
  /** The connection's status ("connecting", "connected", "disconnected"). */
  readonly connection: string;
  /** The broadcast's status ("loading", "live", "offline"). */
  readonly broadcast: string;
  /** The catalog's video codec, once the catalog arrived. */
  readonly videoCodec: string | undefined;
  /** The catalog's audio codec, once the catalog arrived. */
  readonly audioCodec: string | undefined;
  /** Video frames decoded since the player started. */
  readonly frames: number;
  /** Encoded audio bytes received (a headless page has no audio output to play them to). */
  readonly audioBytes: number;
}

/** Where a page's element connects. */
export interface MediaTarget {
  /** The relay's `https://127.0.0.1:<port>/`. */
  readonly url: string;
  /** SHA-256 of the relay's certificate, for WebTransport. */
  readonly hash: Uint8Array;
  /** The broadcast path, e.g. `media/cam.hang`. */
  readonly name: string;
  readonly transport: PageTransport;
}

/** Opens a page of `origin` (serveMediaPage) and adds one element for `target`. */
async function mediaPage(
  context: BrowserContext,
  origin: string,
  element: "moq-publish" | "moq-watch",
  target: MediaTarget,
  log: string[],
): Promise<Page> {
  const page = await context.newPage();
  page.on("console", (m) => log.push(m.text()));
  await page.goto(origin);
  await page.waitForFunction(
    // deno-lint-ignore no-explicit-any
    (tag) => (globalThis as any).customElements.get(tag) !== undefined,
    element,
  );
  await page.evaluate(({ element, url, hash, name, webSocket }) => {
    // deno-lint-ignore no-explicit-any
    const g = globalThis as any;
    if (webSocket) delete g.WebTransport;
    const el = g.document.createElement(element);
    // Set before the URL, which starts the connection.
    el.connection.webtransport = {
      serverCertificateHashes: [{ algorithm: "sha-256", value: new Uint8Array(hash) }],
    };
    el.appendChild(g.document.createElement(element === "moq-publish" ? "video" : "canvas"));
    if (element === "moq-publish") el.setAttribute("source", "camera");
    else el.setAttribute("visible", "always"); // a headless page is never "on screen"
    el.setAttribute("name", name);
    el.setAttribute("url", url);
    g.document.body.appendChild(el);
    g.media = el;
  }, {
    element,
    url: target.url,
    hash: [...target.hash],
    name: target.name,
    webSocket: target.transport === "WebSocket",
  });
  return page;
}

/** Starts publishing Chromium's fake camera and microphone to `target`. */
export function publishCamera(
  context: BrowserContext,
  origin: string,
  target: MediaTarget,
  log: string[],
): Promise<Page> {
  return mediaPage(context, origin, "moq-publish", target, log);
}

/** A `<moq-watch>` page playing `target`, and its statistics. */
export class Watcher {
  readonly page: Page;
  readonly log: string[];
  /** Wall-clock ms when the element was added. */
  readonly startedAt: number;

  private constructor(page: Page, log: string[], startedAt: number) {
    this.page = page;
    this.log = log;
    this.startedAt = startedAt;
  }

  /** Opens the page and starts playing. */
  static async open(
    context: BrowserContext,
    origin: string,
    target: MediaTarget,
  ): Promise<Watcher> {
    const log: string[] = [];
    const startedAt = Date.now();
    const page = await mediaPage(context, origin, "moq-watch", target, log);
    return new Watcher(page, log, startedAt);
  }

  /** The player's statistics now. */
  stats(): Promise<WatchStats> {
    return this.page.evaluate(() => {
      // deno-lint-ignore no-explicit-any
      const w = (globalThis as any).media;
      const catalog = w.broadcast.out.catalog.peek();
      const first = (r: Record<string, { codec: string }> | undefined) =>
        r ? Object.values(r)[0]?.codec : undefined;
      const video = w.video.out.stats.peek();
      const audio = w.audio.out.stats.peek();
      return {
        connection: String(w.connection.status.peek()),
        broadcast: String(w.broadcast.out.status.peek()),
        videoCodec: first(catalog?.video?.renditions),
        audioCodec: first(catalog?.audio?.renditions),
        frames: video?.frameCount ?? 0,
        audioBytes: audio?.bytesReceived ?? 0,
      };
    });
  }

  /** Waits until the statistics satisfy `cond`; returns the wall-clock ms they did. */
  async until(cond: (s: WatchStats) => boolean, what: string): Promise<number> {
    let last: WatchStats | undefined;
    try {
      await until(async () => cond(last = await this.stats()), what);
    } catch (err) {
      throw new Error(
        `${errorText(err)}: ${JSON.stringify(last)}\n${this.log.slice(-20).join("\n")}`,
      );
    }
    return Date.now();
  }

  /** Video frames decoded per second over `ms` of wall-clock time. */
  async frameRate(ms: number): Promise<number> {
    const a = await this.stats();
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, ms));
    const b = await this.stats();
    return (b.frames - a.frames) / ((Date.now() - t0) / 1000);
  }
}
