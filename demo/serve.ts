/**
 * `deno task demo`: a funnel on its defaults (configured by the same
 * environment variables as `sluice funnel`) and a small chat page, plain
 * HTML and the bundled client, that reads and writes one of its tracks.
 * DEMO_ADDR sets where the page is served (default 127.0.0.1:8080).
 */
import { fileURLToPath } from "node:url";
import { loadFunnelConfig } from "../src/config/mod.ts";
import { parseListenAddress } from "../src/config/mod.ts";
import { waitForSignal } from "../src/funnel/mod.ts";
import { startFunnel } from "../src/funnel/mod.ts";
import { startHttpServer } from "../src/http/mod.ts";
import { consoleLogger } from "../src/log/mod.ts";
import { bundlePage } from "./bundle.ts";

/** The track the page reads and writes. */
const TRACK = "demo/chat";
const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));

async function main(): Promise<number> {
  const env = Deno.env.toObject();
  const pageAddr = parseListenAddress(env.DEMO_ADDR ?? "127.0.0.1:8080");
  const [scripts, html] = await Promise.all([
    bundlePage(here("./app.ts")),
    Deno.readFile(here("./index.html")),
  ]);
  let config = "{}";
  const page = await startHttpServer((request) => {
    const path = new URL(request.url).pathname;
    if (path === "/") return new Response(html, { headers: { "content-type": "text/html" } });
    if (path === "/config.json") {
      return new Response(config, { headers: { "content-type": "application/json" } });
    }
    const script = path.startsWith("/js/") ? scripts.get(path.slice(4)) : undefined;
    if (script) return new Response(script, { headers: { "content-type": "text/javascript" } });
    return new Response("Not found", { status: 404 });
  }, pageAddr);
  const port = page.addr.port;
  // The page calls the funnel from its own origin: let it, unless told otherwise.
  const origins = `http://localhost:${port},http://127.0.0.1:${port}`;
  const funnel = await startFunnel(
    loadFunnelConfig({ CORS_ALLOWED_ORIGINS: origins, ...env }),
    { log: consoleLogger("funnel") },
  );
  for (const line of funnel.summary) console.log(line);
  const listener = funnel.live.listener;
  const sha256 = /sha256 ([0-9a-f]{64})/.exec(funnel.summary.join("\n"))?.[1];
  if (!listener || !sha256) {
    console.error("The demo needs the funnel's own MoQ listener: leave RELAY_URL unset");
    await funnel.stop();
    await page.stop();
    return 2;
  }
  // Create the track, so pages subscribe before its first message (PUT is a no-op when it exists).
  const created = await fetch(
    `http://127.0.0.1:${funnel.addr.port}/tracks/${TRACK}`,
    { method: "PUT" },
  ).catch((err: unknown) => err);
  if (!(created instanceof Response) || !created.ok) {
    console.warn(
      `Cannot create the demo track: ${created instanceof Response ? created.status : created}`,
    );
  }
  if (created instanceof Response) await created.body?.cancel();
  config = JSON.stringify({
    track: TRACK,
    httpPort: funnel.addr.port,
    moqPort: listener.addr.port,
    sha256,
  });
  // Every interface (DEMO_ADDR=:port) is reached as localhost; an IPv6 host goes in brackets.
  const bound = page.addr.hostname;
  const host = bound === "0.0.0.0" || bound === "::"
    ? "localhost"
    : bound.includes(":")
    ? `[${bound}]`
    : bound;
  console.log(`Demo: open http://${host}:${port}/ in two browser tabs (Ctrl-C stops)`);
  await waitForSignal();
  await funnel.stop();
  await page.stop();
  return 0;
}

Deno.exit(await main());
