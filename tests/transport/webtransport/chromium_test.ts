import assert from "node:assert/strict";
import { chromiumMissing, launchChromium } from "../../support/chromium.ts";
import { ignoreWithout } from "../../support/requires.ts";
import { WebTransportStreamError } from "../../../src/transport/webtransport/mod.ts";
import { readText, startServer, writeText } from "../_server.ts";

// Headless Chromium's own WebTransport against our HTTP/3 server: no bundle,
// the test code runs in a page served from a local HTTP origin.

interface BrowserResult {
  protocol: string;
  echo: string;
  serverUni: string;
  serverBidi: string;
  datagram: string;
  closeCode: number;
  reason: string;
}

Deno.test({
  name:
    "Chromium WebTransport ⇄ our server: WT-Protocol, streams with FIN both ways, close codes, refusals",
  ignore: ignoreWithout("Chromium", chromiumMissing),
  sanitizeOps: false, // playwright's driver keeps internal timers and pipes between steps
  sanitizeResources: false,
  fn: async (t) => {
    const http = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () =>
        new Response("<!doctype html><title>wt</title>", {
          headers: { "content-type": "text/html" },
        }),
    );
    const goodOrigin = `http://127.0.0.1:${http.addr.port}`;
    const server = await startServer({
      admitWebTransport: (req) => {
        if (req.origin !== goodOrigin) return { status: 403, reason: "origin not allowed" };
        if (req.path !== "/moq") return { status: 404 };
        return req.protocols.includes("moq-lite-05")
          ? { status: 200, protocol: "moq-lite-05" }
          : { status: 400 };
      },
    });
    const browser = await launchChromium();
    const hash = [...server.cert.sha256];
    try {
      const page = await browser.context.newPage();
      await page.goto(`${goodOrigin}/`);

      await t.step(
        "session: protocol, bidi/uni with FIN both ways, datagrams, server close code",
        async () => {
          const serverSide = (async () => {
            const s = await server.sessions.next();
            assert.ok(s);
            assert.equal(s.protocol, "moq-lite-05");
            assert.equal(s.url?.pathname, "/moq");
            assert.equal(s.url?.searchParams.get("jwt"), "t0k");
            const b = await s.acceptBidi();
            const got = await readText(b!.readable); // ends only on the browser's FIN
            await writeText(b!.writable, `echo:${got}`);
            const u = await s.acceptUni();
            assert.equal(await readText(u!.readable), "browser uni");
            const su = await s.openUni();
            await writeText(su.writable, "server uni");
            const sb = await s.openBidi();
            await writeText(sb.writable, "server bidi");
            const reply = await readText(sb.readable);
            const d = await s.readDatagram!();
            await s.sendDatagram!(new TextEncoder().encode(`dg:${new TextDecoder().decode(d)}`));
            s.close(4321, "server bye");
            return reply;
          })();
          const result = await page.evaluate(async ({ url, hash }): Promise<BrowserResult> => {
            const enc = new TextEncoder();
            const dec = new TextDecoder();
            const readAll = async (r: ReadableStream<Uint8Array>): Promise<string> => {
              let s = "";
              const reader = r.getReader();
              for (;;) {
                const { value, done } = await reader.read();
                if (done) return s;
                s += dec.decode(value, { stream: true });
              }
            };
            const writeAll = async (w: WritableStream<Uint8Array>, text: string): Promise<void> => {
              const writer = w.getWriter();
              await writer.write(enc.encode(text));
              await writer.close();
            };
            const wt = new WebTransport(url, {
              serverCertificateHashes: [{ algorithm: "sha-256", value: new Uint8Array(hash) }],
              protocols: ["moq-lite-05"],
            } as WebTransportOptions);
            await wt.ready;
            const bidi = await wt.createBidirectionalStream();
            await writeAll(bidi.writable, "hello");
            const echo = await readAll(bidi.readable);
            const uni = await wt.createUnidirectionalStream();
            await writeAll(uni, "browser uni");
            const inUni = await wt.incomingUnidirectionalStreams.getReader().read();
            const serverUni = await readAll(inUni.value as ReadableStream<Uint8Array>);
            const inBidi = await wt.incomingBidirectionalStreams.getReader().read();
            const sb = inBidi.value as WebTransportBidirectionalStream;
            const serverBidi = await readAll(sb.readable);
            await writeAll(sb.writable, "browser reply");
            const dgw = wt.datagrams.writable.getWriter();
            await dgw.write(enc.encode("ping"));
            const dg = await wt.datagrams.readable.getReader().read();
            const closed = await wt.closed;
            return {
              protocol: (wt as unknown as { protocol: string }).protocol,
              echo,
              serverUni,
              serverBidi,
              datagram: dec.decode(dg.value as Uint8Array),
              closeCode: closed.closeCode ?? -1,
              reason: closed.reason ?? "",
            };
          }, { url: `https://127.0.0.1:${server.port}/moq?jwt=t0k`, hash });
          assert.equal(await serverSide, "browser reply");
          assert.deepEqual(result, {
            protocol: "moq-lite-05",
            echo: "echo:hello",
            serverUni: "server uni",
            serverBidi: "server bidi",
            datagram: "dg:ping",
            closeCode: 4321,
            reason: "server bye",
          });
        },
      );

      await t.step("browser close({closeCode, reason}) reaches the server", async () => {
        const closedOnServer = (async () => (await server.sessions.next())!.closed)();
        await page.evaluate(async ({ url, hash }) => {
          const wt = new WebTransport(url, {
            serverCertificateHashes: [{ algorithm: "sha-256", value: new Uint8Array(hash) }],
            protocols: ["moq-lite-05"],
          } as WebTransportOptions);
          await wt.ready;
          wt.close({ closeCode: 1234, reason: "browser bye" });
        }, { url: `https://127.0.0.1:${server.port}/moq`, hash });
        assert.deepEqual(await closedOnServer, { code: 1234, reason: "browser bye" });
      });

      await t.step("a browser stream reset arrives with its WebTransport error code", async () => {
        const serverSide = (async () => {
          const s = await server.sessions.next();
          const u = await s!.acceptUni();
          const reader = u!.readable.getReader();
          const first = await reader.read();
          // Tell the page its bytes arrived, so its reset cannot overtake the stream header.
          await writeText((await s!.openUni()).writable, "go");
          const err = await reader.read().then(() => undefined, (e: unknown) => e);
          s!.close(0, "");
          return { first: new TextDecoder().decode(first.value), err };
        })();
        await page.evaluate(async ({ url, hash }) => {
          const wt = new WebTransport(url, {
            serverCertificateHashes: [{ algorithm: "sha-256", value: new Uint8Array(hash) }],
            protocols: ["moq-lite-05"],
          } as WebTransportOptions);
          await wt.ready;
          const w = (await wt.createUnidirectionalStream()).getWriter();
          await w.write(new TextEncoder().encode("partial"));
          const go = await wt.incomingUnidirectionalStreams.getReader().read();
          await (go.value as ReadableStream).getReader().read();
          // deno-lint-ignore no-explicit-any
          const WTError = (globalThis as any).WebTransportError;
          await w.abort(new WTError({ message: "abandon", streamErrorCode: 42 }));
          await wt.closed.catch(() => {});
        }, { url: `https://127.0.0.1:${server.port}/moq`, hash });
        const { first, err } = await serverSide;
        assert.equal(first, "partial");
        assert.ok(err instanceof WebTransportStreamError, String(err));
        assert.equal(err.wireCode, 42);
      });

      // Opens a WebTransport session from `on` (a page), reporting whether it opened.
      const attempt = (url: string, on = page) =>
        on.evaluate(async ({ url, hash }) => {
          const wt = new WebTransport(url, {
            serverCertificateHashes: [{ algorithm: "sha-256", value: new Uint8Array(hash) }],
            protocols: ["moq-lite-05"],
          } as WebTransportOptions);
          wt.closed.catch(() => {});
          try {
            await wt.ready;
            wt.close();
            return "opened";
          } catch (err) {
            return `refused: ${(err as Error).message}`;
          }
        }, { url, hash });

      await t.step("a bad path is refused before the session opens", async () => {
        const before = server.requests.length;
        assert.match(await attempt(`https://127.0.0.1:${server.port}/nope`), /^refused/);
        assert.equal(server.requests.at(before)?.path, "/nope");
      });

      await t.step("a refused Origin is refused before the session opens", async () => {
        const other = await browser.context.newPage();
        await other.goto(`http://localhost:${http.addr.port}/`);
        const before = server.requests.length;
        const outcome = await attempt(`https://127.0.0.1:${server.port}/moq`, other);
        assert.match(outcome, /^refused/);
        assert.equal(server.requests.at(before)?.origin, `http://localhost:${http.addr.port}`);
        await other.close();
      });
      // No session other than the two accepted ones was ever created.
      server.sessions.close();
      assert.equal(await server.sessions.next(), undefined);
    } finally {
      await browser.close();
      await server.stop();
      await http.shutdown();
    }
  },
});
