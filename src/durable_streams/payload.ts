import { HttpProblem } from "../http/mod.ts";

/** What one append stores: JSON text (with its message count) or bytes. */
export interface AppendData {
  /** JSON streams: one message, or an array of `n` messages. */
  readonly payload?: string;
  /** JSON streams: messages in `payload` when it is an array of several. */
  readonly n?: number;
  /** Other streams: the bytes. */
  readonly bytes?: Uint8Array;
  /** Messages (JSON) or bytes appended; 0 for nothing. */
  readonly count: number;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * A JSON body's messages, each as its exact text: the elements of a
 * top-level array (flattened one level), or the body itself. 400 for text
 * that is not JSON.
 */
export function jsonMessages(body: Uint8Array): string[] {
  let text: string;
  let value: unknown;
  try {
    text = decoder.decode(body);
    value = JSON.parse(text);
  } catch {
    throw new HttpProblem(400, "The body is not valid JSON");
  }
  return Array.isArray(value) ? splitArray(text) : [text.trim()];
}

/** The element texts of a JSON array's text (already known to be valid). */
export function splitArray(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inString = false;
  let start = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "[" || c === "{") {
      if (depth++ === 0 && c === "[") start = i + 1;
    } else if (c === "]" || c === "}") {
      if (--depth === 0) push(out, text.slice(start, i));
    } else if (c === "," && depth === 1) {
      push(out, text.slice(start, i));
      start = i + 1;
    }
  }
  return out;
}

function push(out: string[], element: string): void {
  const trimmed = element.trim();
  if (trimmed !== "") out.push(trimmed);
}

/** What a JSON stream stores for these messages. */
export function jsonData(messages: readonly string[]): AppendData {
  if (messages.length === 0) return { count: 0 };
  if (messages.length === 1) return { payload: messages[0]!, count: 1 };
  return { payload: `[${messages.join(",")}]`, n: messages.length, count: messages.length };
}

/** The data of an append body for a stream of this kind. */
export function appendData(json: boolean, body: Uint8Array): AppendData {
  if (body.length === 0) return { count: 0 };
  if (json) return jsonData(jsonMessages(body));
  return { bytes: body, count: body.length };
}
