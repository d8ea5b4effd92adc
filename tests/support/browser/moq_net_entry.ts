// Bundled for the browser by chromium.ts (serveMoqNetPage): exposes @moq/net to page scripts.
import * as Moq from "@moq/net";

Object.assign(globalThis, { Moq });
