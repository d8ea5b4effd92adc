/**
 * `deno task media-demo`: a `sluice relay` process (auth off, a fresh
 * development certificate, pinned by the pages by hash) and two pages built on moq-dev's own media web components:
 * `/publish` sends the camera and microphone with `<moq-publish>`, `/watch`
 * plays it with `<moq-watch>`. RELAY_ADDR sets the relay (default
 * 127.0.0.1:4443), DEMO_ADDR the pages (default 127.0.0.1:8081).
 */
import { fileURLToPath } from "node:url";
import { generateDevCertificate, toHex } from "../src/certs/mod.ts";
import { parseListenAddress } from "../src/config/mod.ts";
import { waitForSignal } from "../src/funnel/mod.ts";
import { startHttpServer } from "../src/http/mod.ts";
import { bundlePage } from "./bundle.ts";

/** The broadcast the pages publish and play. */
const NAME = "demo/camera.hang";
const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));

async function main(): Promise<number> {
  const env = Deno.env.toObject();
  const pageAddr = parseListenAddress(env.DEMO_ADDR ?? "127.0.0.1:8081");
  const relayAddr = parseListenAddress(env.RELAY_ADDR ?? "127.0.0.1:4443");
  const [scripts, html, cert] = await Promise.all([
    bundlePage(here("./media_app.ts")),
    Deno.readFile(here("./media.html")),
    generateDevCertificate(),
  ]);
  const dir = await Deno.makeTempDir({ prefix: "sluice-media-demo-" });
  await Deno.writeTextFile(`${dir}/server.crt`, cert.certPem);
  await Deno.writeTextFile(`${dir}/server.key`, cert.keyPem);
  // `sluice relay` itself, as deployed (auth off: a demo on loopback).
  const relay = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", here("../src/cli.ts"), "relay"],
    env: {
      RELAY_ADDR: `${relayAddr.hostname}:${relayAddr.port}`,
      CERT_FILE: `${dir}/server.crt`,
      KEY_FILE: `${dir}/server.key`,
    },
  }).spawn();
  // Chromium's QUIC dials the first address of "localhost" (::1) only; 127.0.0.1 always works.
  const host = relayAddr.hostname === "" || relayAddr.hostname === "::" ||
      relayAddr.hostname === "0.0.0.0"
    ? "127.0.0.1"
    : relayAddr.hostname;
  const config = JSON.stringify({
    url: `https://${host.includes(":") ? `[${host}]` : host}:${relayAddr.port}/`,
    sha256: toHex(cert.sha256),
    name: NAME,
  });
  const page = await startHttpServer((request) => {
    const path = new URL(request.url).pathname;
    if (path === "/" || path === "/publish" || path === "/watch") {
      return new Response(html, { headers: { "content-type": "text/html" } });
    }
    if (path === "/config.json") {
      return new Response(config, { headers: { "content-type": "application/json" } });
    }
    const script = path.startsWith("/js/") ? scripts.get(path.slice(4)) : undefined;
    if (script) return new Response(script, { headers: { "content-type": "text/javascript" } });
    return new Response("Not found", { status: 404 });
  }, pageAddr);
  const origin = `http://${page.addr.hostname}:${page.addr.port}`;
  console.log(`Media demo: open ${origin}/publish and ${origin}/watch (Ctrl-C stops)`);
  const ended = await Promise.race([waitForSignal().then(() => undefined), relay.status]);
  if (ended === undefined) relay.kill("SIGTERM");
  await relay.status;
  await page.stop();
  await Deno.remove(dir, { recursive: true });
  return ended === undefined ? 0 : 1;
}

Deno.exit(await main());
