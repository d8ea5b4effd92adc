/** Parses an IPv4 or IPv6 literal into its bytes; undefined for anything else (a DNS name). */
export function parseIpAddress(text: string): Uint8Array | undefined {
  const v4 = parseIpv4(text);
  if (v4) return v4;
  return text.includes(":") ? parseIpv6(text.replace(/^\[|\]$/g, "")) : undefined;
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i] ?? "";
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return undefined;
    out[i] = Number(part);
  }
  return out;
}

function parseIpv6(text: string): Uint8Array | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string): number[] | undefined => {
    if (s === "") return [];
    const out: number[] = [];
    for (const g of s.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = groups(halves[0] ?? "");
  const tail = halves.length === 2 ? groups(halves[1] ?? "") : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  });
  return out;
}
