/**
 * A minimal DER (ASN.1) encoder: just the types an X.509 certificate needs.
 * Writing DER is simple and total, so no third-party ASN.1 library is used.
 */
import { concatBytes } from "../wire/mod.ts";

/** Encodes a tag with its definite length and contents. */
export function tlv(tag: number, contents: Uint8Array): Uint8Array<ArrayBuffer> {
  const len = contents.length;
  let header: number[];
  if (len < 0x80) header = [tag, len];
  else {
    const bytes: number[] = [];
    for (let n = len; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
    header = [tag, 0x80 | bytes.length, ...bytes];
  }
  const out = new Uint8Array(header.length + len);
  out.set(header, 0);
  out.set(contents, header.length);
  return out;
}

/** SEQUENCE of already-encoded elements. */
export function sequence(...items: Uint8Array[]): Uint8Array<ArrayBuffer> {
  return tlv(0x30, concatBytes(items));
}

/** SET of already-encoded elements (callers pass one element, so no sorting is needed). */
export function set(...items: Uint8Array[]): Uint8Array<ArrayBuffer> {
  return tlv(0x31, concatBytes(items));
}

/** INTEGER from unsigned big-endian magnitude bytes. */
export function integerBytes(magnitude: Uint8Array): Uint8Array<ArrayBuffer> {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const trimmed = magnitude.subarray(start);
  const pad = (trimmed[0] ?? 0) & 0x80 ? new Uint8Array([0]) : new Uint8Array(0);
  return tlv(0x02, concatBytes([pad, trimmed.length ? trimmed : new Uint8Array([0])]));
}

/** INTEGER from a small non-negative number. */
export function integer(value: number): Uint8Array<ArrayBuffer> {
  const bytes: number[] = [];
  for (let n = value; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return integerBytes(new Uint8Array(bytes.length ? bytes : [0]));
}

/** OBJECT IDENTIFIER from dotted text. */
export function oid(dotted: string): Uint8Array<ArrayBuffer> {
  const arcs = dotted.split(".").map((s) => Number(s));
  const first = arcs[0] ?? 0;
  const second = arcs[1] ?? 0;
  const out: number[] = [first * 40 + second];
  for (const arc of arcs.slice(2)) {
    const chunk: number[] = [arc & 0x7f];
    for (let n = Math.floor(arc / 128); n > 0; n = Math.floor(n / 128)) {
      chunk.unshift((n & 0x7f) | 0x80);
    }
    out.push(...chunk);
  }
  return tlv(0x06, new Uint8Array(out));
}

/** BOOLEAN. */
export function boolean(value: boolean): Uint8Array<ArrayBuffer> {
  return tlv(0x01, new Uint8Array([value ? 0xff : 0]));
}

/** OCTET STRING. */
export function octetString(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return tlv(0x04, bytes);
}

/** BIT STRING with the given number of unused trailing bits. */
export function bitString(bytes: Uint8Array, unusedBits = 0): Uint8Array<ArrayBuffer> {
  return tlv(0x03, concatBytes([new Uint8Array([unusedBits]), bytes]));
}

/** UTF8String. */
export function utf8String(text: string): Uint8Array<ArrayBuffer> {
  return tlv(0x0c, new TextEncoder().encode(text));
}

/** UTCTime before 2050, GeneralizedTime from 2050 on (RFC 5280 §4.1.2.5). */
export function time(date: Date): Uint8Array<ArrayBuffer> {
  const p = (n: number, w = 2): string => String(n).padStart(w, "0");
  const year = date.getUTCFullYear();
  const rest = p(date.getUTCMonth() + 1) + p(date.getUTCDate()) + p(date.getUTCHours()) +
    p(date.getUTCMinutes()) + p(date.getUTCSeconds()) + "Z";
  if (year >= 1950 && year < 2050) {
    return tlv(0x17, new TextEncoder().encode(p(year % 100) + rest));
  }
  return tlv(0x18, new TextEncoder().encode(p(year, 4) + rest));
}

/** Context-specific constructed tag [n] EXPLICIT. */
export function explicit(n: number, inner: Uint8Array): Uint8Array<ArrayBuffer> {
  return tlv(0xa0 | n, inner);
}
