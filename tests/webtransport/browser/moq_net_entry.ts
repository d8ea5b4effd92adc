// Bundled for the browser by moq_net_test.ts: exposes @moq/net to page scripts.
import * as Moq from "@moq/net";

Object.assign(globalThis, { Moq });
