/** Wraps DER bytes as PEM text with the given label. */
export function toPem(label: string, der: Uint8Array): string {
  let b64 = "";
  const chunk = 0x8000;
  for (let i = 0; i < der.length; i += chunk) {
    b64 += String.fromCharCode(...der.subarray(i, i + chunk));
  }
  const body = btoa(b64).replace(/.{1,64}/g, "$&\n");
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

/** Extracts the DER bytes of the first PEM block with the given label. */
export function fromPem(label: string, pem: string): Uint8Array<ArrayBuffer> {
  const match = new RegExp(`-----BEGIN ${label}-----([^-]*)-----END ${label}-----`).exec(pem);
  if (!match) throw new SyntaxError(`Cannot find a "${label}" PEM block`);
  const b64 = (match[1] ?? "").replace(/\s+/g, "");
  let bin: string;
  try {
    bin = atob(b64);
  } catch {
    throw new SyntaxError(`Cannot decode the "${label}" PEM block: invalid base64`);
  }
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** Lower-case hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Standard base64 of bytes. */
export function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}
