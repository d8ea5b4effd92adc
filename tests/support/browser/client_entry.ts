// Bundled for the browser by chromium.ts (serveClientPage): exposes sluice's client, and the
// browser WebTransport adapter it dials with, to page scripts as the global `Sluice`.
import { openFeed } from "../../../src/client/mod.ts";
import { connectWebTransportApi } from "../../../src/transport/mod.ts";

Object.assign(globalThis, { Sluice: { openFeed, connectWebTransportApi } });
