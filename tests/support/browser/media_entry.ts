// Bundled for the browser by chromium.ts (serveMediaPage): moq-dev's own media web components,
// <moq-publish> (camera and microphone to a hang broadcast, WebCodecs) and <moq-watch> (its player).
import "@moq/publish/element";
import "@moq/watch/element";
