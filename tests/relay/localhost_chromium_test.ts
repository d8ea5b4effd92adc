// A browser pointed at `https://localhost:<port>/` of a relay on `RELAY_ADDR=:port` (the shipped
// default's form) gets WebTransport. Chromium's QUIC dials `localhost` as ::1 alone and does not
// fall back to 127.0.0.1 as its TCP does, so while `:port` bound 0.0.0.0 only, @moq/net's
// WebTransport failed and it kept the WebSocket that opened after it, with no error. Now `:port`
// binds `::`, which takes ::1 and 127.0.0.1. The fixture (../support/moq_net_page.ts) checks the
// page's console ("connected via WebTransport") and the relay's
// sluice_relay_sessions_total{transport="webtransport"}; the page gives WebTransport a 5 s head
// start before WebSocket.
import assert from "node:assert/strict";
import { loadRelayConfig } from "../../src/config/mod.ts";
import { probeEveryInterface } from "../../src/transport/mod.ts";
import { chromiumMissing } from "../support/chromium.ts";
import { withMoqNetPage } from "../support/moq_net_page.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { ignoreWithout } from "../support/requires.ts";

// Where `:port` is IPv4 only on this host (IPv6 sockets take no IPv4, or no IPv6), Chromium's
// WebTransport to localhost cannot reach the relay: the limit docs/relay.md describes.
const ipv4Only = probeEveryInterface().ipv4Only;
if (ipv4Only !== undefined) {
  console.warn(`NOTE: :port is IPv4 only on this host (${ipv4Only}): the test is SKIPPED`);
}

Deno.test({
  name:
    "Chromium at https://localhost:<port>/ of a relay on RELAY_ADDR=:port: @moq/net gets a WebTransport session, not WebSocket",
  ignore: ignoreWithout("Chromium", chromiumMissing) || ipv4Only !== undefined,
  sanitizeOps: false, // playwright's driver keeps internal timers and pipes
  sanitizeResources: false,
  fn: () =>
    withMoqNetPage("WebTransport", async ({ relay }) => {
      const f = families(await (await relay.get("/metrics")).text());
      const sessions = (transport: string) =>
        sampleValue(f, "sluice_relay_sessions_total", { transport, class: "client" }) ?? 0;
      assert.equal(sessions("websocket"), 0, "no WebSocket session was needed");
    }, {
      relayHostname: loadRelayConfig({ RELAY_ADDR: ":0" }).addr.value.hostname,
      urlHost: "localhost",
    }),
});
