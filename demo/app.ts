/**
 * The demo page: the last 50 messages of the track, then new ones live;
 * a form that posts; × redacts a message, which removes it in every tab.
 */
import { type FeedRecord, openFeed, post, redact } from "../src/client/mod.ts";

interface DemoConfig {
  readonly track: string;
  readonly httpPort: number;
  readonly moqPort: number;
  readonly sha256: string;
}

/** A chat message as the page posts it. */
interface Message {
  readonly name?: unknown;
  readonly text?: unknown;
}

/**
 * The few DOM members the page uses, declared here because the project is
 * type-checked with Deno's libraries (which have no DOM) in one program.
 */
interface PageElement {
  textContent: string | null;
  className: string;
  title: string;
  value: string;
  dateTime: string;
  scrollTop: number;
  readonly dataset: Record<string, string | undefined>;
  readonly scrollHeight: number;
  readonly clientHeight: number;
  readonly children: { readonly length: number };
  readonly firstElementChild: PageElement | null;
  append(...nodes: PageElement[]): void;
  remove(): void;
  querySelector(selector: string): PageElement | null;
  addEventListener(type: string, listener: (event: { preventDefault(): void }) => void): void;
}
const document = (globalThis as unknown as {
  document: {
    querySelector(selector: string): PageElement | null;
    createElement(tag: string): PageElement;
  };
}).document;

const config = await (await fetch("/config.json")).json() as DemoConfig;
const host = location.hostname;
const track = `http://${host}:${config.httpPort}/tracks/${config.track}`;
const hash = Uint8Array.from(config.sha256.match(/../g) ?? [], (h) => parseInt(h, 16));

const log = document.querySelector("#log")!;
const state = document.querySelector("#state")!;
const form = document.querySelector("#send")!;
const nameInput = document.querySelector("#name")!;
const textInput = document.querySelector("#text")!;
nameInput.value = localStorage.getItem("sluice-demo-name") ?? "";

const feed = openFeed({
  track,
  moq: `https://${host}:${config.moqPort}/`,
  from: { last: 50 },
  serverCertificateHashes: [{ algorithm: "sha-256", value: hash }],
});
feed.addEventListener("statechange", () => {
  const transport = feed.transport;
  state.textContent = transport ? `${feed.state} · ${transport}` : feed.state;
  state.className = feed.state;
  state.dataset.transport = transport ?? "";
});

function show(record: FeedRecord): void {
  if (record.redacts !== undefined) {
    log.querySelector(`li[data-group="${record.redacts}"]`)?.remove();
    return;
  }
  if (record.redacted) return;
  const message = (record.payload ?? {}) as Message;
  const li = document.createElement("li");
  li.dataset.group = record.group;
  li.dataset.receivedAt = String(Date.now());
  const at = record.wallclock === undefined
    ? new Date()
    : new Date(Number(record.wallclock / 1_000_000n));
  const name = document.createElement("span");
  name.className = "name";
  name.textContent = typeof message.name === "string" ? message.name : record.sender ?? "?";
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = typeof message.text === "string"
    ? message.text
    : JSON.stringify(record.payload);
  const time = document.createElement("time");
  time.dateTime = at.toISOString();
  time.textContent = at.toLocaleTimeString();
  const remove = document.createElement("button");
  remove.title = "Redact";
  remove.textContent = "×";
  remove.addEventListener("click", () => void redact(track, record.group).catch(console.error));
  li.append(name, text, time, remove);
  const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  log.append(li);
  while (log.children.length > 200) log.firstElementChild?.remove();
  if (atBottom) log.scrollTop = log.scrollHeight;
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = textInput.value.trim();
  const name = nameInput.value.trim();
  if (text === "" || name === "") return;
  localStorage.setItem("sluice-demo-name", name);
  textInput.value = "";
  post(track, { name, text }).catch((err) => {
    console.error(err);
    textInput.value = text;
  });
});

for await (const record of feed) show(record);
