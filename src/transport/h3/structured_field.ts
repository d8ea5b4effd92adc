/** Parses an RFC 8941 List whose members are Strings (parameters ignored); non-string members are skipped. */
export function parseStringList(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    while (i < n && (text[i] === " " || text[i] === "\t")) i++;
    if (i >= n) break;
    if (text[i] === '"') {
      i++;
      let value = "";
      let closed = false;
      while (i < n) {
        const ch = text[i++];
        if (ch === "\\") {
          const next = text[i++];
          if (next !== '"' && next !== "\\") {
            throw new SyntaxError(`Cannot parse sf-string in "${text}"`);
          }
          value += next;
        } else if (ch === '"') {
          closed = true;
          break;
        } else {
          value += ch;
        }
      }
      if (!closed) throw new SyntaxError(`Cannot parse sf-string in "${text}": unterminated`);
      out.push(value);
    }
    // skip the rest of the member (parameters, or a non-string item) up to the next comma
    let inQuote = false;
    while (i < n && (inQuote || text[i] !== ",")) {
      if (text[i] === '"') inQuote = !inQuote;
      if (text[i] === "\\" && inQuote) i++;
      i++;
    }
    i++;
  }
  return out;
}

/** Parses a single RFC 8941 String item (the `wt-protocol` response header); parameters ignored. */
export function parseStringItem(text: string): string {
  const list = parseStringList(text.trim());
  const first = list[0];
  if (first === undefined || !text.trim().startsWith('"')) {
    throw new SyntaxError(`Cannot parse sf-string "${text}"`);
  }
  return first;
}

/** Serializes an RFC 8941 String. */
export function serializeString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) throw new TypeError(`Cannot serialize sf-string "${value}"`);
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** Serializes an RFC 8941 List of Strings. */
export function serializeStringList(values: readonly string[]): string {
  return values.map(serializeString).join(", ");
}
