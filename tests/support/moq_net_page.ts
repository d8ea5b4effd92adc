// @moq/net in a headless Chromium page, connected to a test relay over the transport named, and
// what a reader of frames (in the page or in Deno) reports: each frame with the wall-clock time it
// was read, so a test can time frames from publisher to reader across the two processes.
//
// Two things decide whether Chromium's WebTransport reaches a test relay at all (both found with
// the page's console; the transport's race in @moq/net hides them behind a WebSocket session):
// - Chromium trusts the self-signed certificate for QUIC only through `serverCertificateHashes`:
//   `--ignore-certificate-errors-spki-list` (./chromium.ts) covers TCP TLS, not QUIC
//   (QUIC_TLS_CERTIFICATE_UNKNOWN).
// - For `localhost`, Chromium's QUIC dials the first address only, ::1, where a relay bound to
//   127.0.0.1 is not (QUIC_PACKET_WRITE_ERROR, connection refused); TCP falls back to 127.0.0.1.
//   So the page dials 127.0.0.1, unless told to dial `localhost` of a relay on every interface
//   (`::`, which takes ::1 and 127.0.0.1: ../relay/localhost_chromium_test.ts).
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { quantileTenth } from "../../bench/support/quantile.ts";
import { testCertificate } from "./certs.ts";
import { launchChromium, serveMoqNetPage, trustKeyFlag } from "./chromium.ts";
import { families, sampleValue } from "./prometheus.ts";
import { quiet } from "./quiet.ts";
import { startTestRelay, type TestRelay } from "./test_relay.ts";
import { within } from "./wait.ts";

/** The transports @moq/net uses in a browser. */
export const PAGE_TRANSPORTS = ["WebTransport", "WebSocket"] as const;
/** One of {@linkcode PAGE_TRANSPORTS}. */
export type PageTransport = typeof PAGE_TRANSPORTS[number];

/** Wall-clock milliseconds, sub-millisecond; a page computes the same expression. */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

/** One frame a reader read (`index` {@linkcode GROUP_END}: the group ended). */
export interface Arrival {
  readonly seq: number;
  readonly index: number;
  readonly text: string;
  /** {@linkcode wallClockMs} when it was read. */
  readonly at: number;
}

/** The `index` of the arrival that says a group ended. */
export const GROUP_END = -1;

/** What a reader reported, and waiting for one report. */
export class Arrivals {
  readonly #seen: Arrival[] = [];
  #changed = Promise.withResolvers<void>();

  /** How many were reported. */
  get count(): number {
    return this.#seen.length;
  }

  /** Records one (a page reports through its `sluiceArrived` binding). */
  add(a: Arrival): void {
    this.#seen.push(a);
    const was = this.#changed;
    this.#changed = Promise.withResolvers();
    was.resolve();
  }

  /** Whether frame `index` of group `seq` was reported. */
  has(seq: number, index: number): boolean {
    return this.#seen.some((a) => a.seq === seq && a.index === index);
  }

  /** Waits for frame `index` of group `seq`; throws naming `what` after 20 s. */
  wait(seq: number, index: number, what: string): Promise<Arrival> {
    const find = async (): Promise<Arrival> => {
      for (;;) {
        const a = this.#seen.find((a) => a.seq === seq && a.index === index);
        if (a) return a;
        await this.#changed.promise;
      }
    };
    return within(find(), 20_000, what);
  }

  /** Calls `write` every 20 ms until the reader reported something (a live reader starts later). */
  async warmUp(write: () => unknown, what: string): Promise<void> {
    for (let i = 0; this.count === 0; i++) {
      assert.ok(i < 500, `${what} never received a group`);
      await write();
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** A relay and a page whose global `conn` is an @moq/net connection to it. */
export interface PageFixture {
  readonly relay: TestRelay;
  readonly page: Page;
  /** Where a page reader reports: the page calls `sluiceArrived(arrival)`. */
  readonly arrivals: Arrivals;
}

/** Where {@linkcode withMoqNetPage}'s relay listens and its page dials. */
export interface PageDial {
  /** The relay's interface (default 127.0.0.1; "" every interface, as `RELAY_ADDR=:port`). */
  readonly relayHostname?: string;
  /** The host of the page's `https://<host>:<port>/` (default 127.0.0.1). */
  readonly urlHost?: string;
  /** The WebTransport protocols the page offers (default @moq/net's list), e.g. one IETF draft's. */
  readonly protocols?: readonly string[];
}

/**
 * Starts a relay and a browser, connects @moq/net in a page to the relay over `transport` (for
 * WebSocket, WebTransport is removed from the page, as in a browser without it), checks on the
 * relay's metrics that the session is a `transport` one, and runs `body`.
 */
export async function withMoqNetPage(
  transport: PageTransport,
  body: (f: PageFixture) => Promise<void>,
  dial: PageDial = {},
): Promise<void> {
  using _q = quiet();
  const c = await testCertificate();
  const page$ = await serveMoqNetPage();
  const relay = await startTestRelay({
    cors: [page$.origin],
    ...(dial.relayHostname !== undefined ? { extra: { hostname: dial.relayHostname } } : {}),
  });
  const browser = await launchChromium([await trustKeyFlag(c.keyPem)]);
  try {
    const page = await browser.context.newPage();
    const lines: string[] = [];
    page.on("console", (m) => lines.push(m.text()));
    const arrivals = new Arrivals();
    await page.exposeFunction("sluiceArrived", (a: Arrival) => arrivals.add(a));
    await page.goto(page$.origin);
    await page.waitForFunction(() => "Moq" in globalThis);
    await page.evaluate(async ({ url, hash, webSocket, protocols }) => {
      // deno-lint-ignore no-explicit-any
      const g = globalThis as any;
      if (webSocket) delete g.WebTransport;
      // @moq/net's own race of WebTransport against WebSocket, with WebTransport's head start
      // raised from 500 ms to 5 s: a loaded machine can take longer than 500 ms to open it.
      g.conn = await g.Moq.Connection.connect(new URL(url), {
        websocket: { delay: 5_000 },
        webtransport: {
          serverCertificateHashes: [{ algorithm: "sha-256", value: new Uint8Array(hash) }],
          ...(protocols ? { protocols } : {}),
        },
      });
    }, {
      url: `https://${dial.urlHost ?? "127.0.0.1"}:${relay.port}/`,
      hash: [...c.sha256],
      webSocket: transport === "WebSocket",
      protocols: dial.protocols ? [...dial.protocols] : undefined,
    });
    assert.ok(
      lines.some((l) => l.includes(`connected via ${transport}`)),
      `@moq/net says it connected via ${transport}:\n${lines.join("\n")}`,
    );
    const f = families(await (await relay.get("/metrics")).text());
    const label = { transport: transport.toLowerCase(), class: "client" };
    assert.equal(
      sampleValue(f, "sluice_relay_sessions_total", label),
      1,
      `the page's session is a ${transport} one:\n${lines.join("\n")}`,
    );
    await body({ relay, page, arrivals });
  } finally {
    await browser.close();
    await relay.stop();
    await page$.stop();
  }
}

/** Prints the p50 and max of per-frame latencies (ms) under `what`; returns them. */
export function printLatency(what: string, ms: number[]): { p50: number; max: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  const r = { p50: quantileTenth(sorted, 0.5), max: quantileTenth(sorted, 1) };
  console.log(`${what}: frame latency p50 ${r.p50} ms, max ${r.max} ms (${ms.length} frames)`);
  return r;
}
