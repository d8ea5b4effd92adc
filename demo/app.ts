/**
 * The demo page: the last 50 messages of the track, then new ones live;
 * "Load older" pages further back; a form that posts; × redacts a message,
 * which removes it in every tab.
 */
import { type FeedRecord, history, openFeed, post, redact } from "../src/client/mod.ts";

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
  hidden: boolean;
  readonly dataset: Record<string, string | undefined>;
  readonly scrollHeight: number;
  readonly clientHeight: number;
  readonly children: { readonly length: number };
  readonly firstElementChild: PageElement | null;
  append(...nodes: PageElement[]): void;
  prepend(...nodes: PageElement[]): void;
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
const older = document.querySelector("#older")!;
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

/** Older pages loaded so far: the log then keeps every message. */
let loadedOlder = false;

function show(record: FeedRecord): void {
  if (record.redacts !== undefined) {
    log.querySelector(`li[data-group="${record.redacts}"]`)?.remove();
    return;
  }
  const li = render(record);
  if (!li) return;
  const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  log.append(li);
  while (!loadedOlder && log.children.length > 200) log.firstElementChild?.remove();
  if (atBottom) log.scrollTop = log.scrollHeight;
}

function render(record: FeedRecord): PageElement | undefined {
  if (record.redacted || record.redacts !== undefined) return undefined;
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
  return li;
}

// "Load older": the page before the oldest message shown (history pages are oldest first).
older.addEventListener("click", async () => {
  const before = log.firstElementChild?.dataset.group ?? feed.position;
  if (before === undefined) return;
  const page = await history(track, { before, limit: 50 });
  loadedOlder = true;
  log.prepend(...page.records.map(render).filter((li) => li !== undefined));
  if (page.before === undefined) older.hidden = true;
});

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
