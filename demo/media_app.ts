/**
 * The media demo's page script: moq-dev's own web components, `<moq-publish>`
 * (camera and microphone, WebCodecs, a hang catalog) on `/publish` and
 * `<moq-watch>` (its player) on `/watch`, both connected to the demo's relay
 * with its development certificate pinned by hash.
 */
import "@moq/publish/element";
import "@moq/watch/element";

interface MediaConfig {
  /** The relay's `https://` URL. */
  readonly url: string;
  /** Hex SHA-256 of its certificate. */
  readonly sha256: string;
  /** The broadcast path. */
  readonly name: string;
}

/** The DOM, declared here because the project is type-checked with Deno's libraries. */
// deno-lint-ignore no-explicit-any
const dom = globalThis as any;

const config = await (await fetch("/config.json")).json() as MediaConfig;
const hash = new Uint8Array(config.sha256.match(/../g)!.map((h) => parseInt(h, 16)));
const publishing = location.pathname === "/publish";
const element = dom.document.createElement(publishing ? "moq-publish" : "moq-watch");
// Set before the URL, which starts the connection.
element.connection.webtransport = {
  serverCertificateHashes: [{ algorithm: "sha-256", value: hash }],
};
element.appendChild(dom.document.createElement(publishing ? "video" : "canvas"));
if (publishing) element.setAttribute("source", "camera");
element.setAttribute("name", config.name);
element.setAttribute("url", config.url);
dom.document.getElementById("player").appendChild(element);
