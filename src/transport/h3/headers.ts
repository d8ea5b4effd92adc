import { H3Code, H3ConnectionError } from "./errors.ts";
import { FrameType, isForbiddenOnRequestStream } from "./frame.ts";
import {
  decodeFieldSection,
  encodeFieldSection,
  type HeaderField,
  HeaderTooLargeError,
  QpackError,
} from "./qpack.ts";
import type { StreamReader } from "../../wire/mod.ts";

/**
 * Reads frames on a request stream until HEADERS and decodes it. Unknown
 * (GREASE) frames are skipped; DATA first or control-only frames are
 * connection errors. Returns undefined when the stream ends first.
 * Throws HeaderTooLargeError (a stream-level problem) when the section is
 * over `maxSize`, and H3ConnectionError for QPACK or framing errors.
 */
export async function readHeaders(
  r: StreamReader,
  maxSize: number,
  firstType?: number,
): Promise<HeaderField[] | undefined> {
  let skipped = 0;
  let pendingType = firstType;
  for (;;) {
    const type = pendingType ?? await r.varint("a frame");
    pendingType = undefined;
    if (type === undefined) return undefined;
    const length = await r.varint("a frame");
    if (length === undefined) return undefined;
    if (type === FrameType.HEADERS) {
      if (length > maxSize) {
        throw new HeaderTooLargeError(`HEADERS frame of ${length} bytes exceeds ${maxSize}`);
      }
      const payload = await r.bytes(length, "HEADERS");
      try {
        return decodeFieldSection(payload, maxSize);
      } catch (err) {
        if (err instanceof QpackError) {
          throw new H3ConnectionError(H3Code.QPACK_DECOMPRESSION_FAILED, err.message);
        }
        throw err;
      }
    }
    if (
      type === FrameType.DATA || type === FrameType.PUSH_PROMISE || isForbiddenOnRequestStream(type)
    ) {
      throw new H3ConnectionError(
        H3Code.FRAME_UNEXPECTED,
        `Frame 0x${type.toString(16)} before HEADERS on a request stream`,
      );
    }
    skipped += length;
    if (skipped > 64 * 1024) {
      throw new H3ConnectionError(H3Code.EXCESSIVE_LOAD, "Too many unknown frames before HEADERS");
    }
    await r.skip(length);
  }
}

/** Encodes a HEADERS frame payload. */
export function headersPayload(fields: readonly HeaderField[]): Uint8Array {
  return encodeFieldSection(fields);
}

/** Finds the first value of `name`. */
export function headerValue(fields: readonly HeaderField[], name: string): string | undefined {
  return fields.find((f) => f[0] === name)?.[1];
}

/** Checks the field section is well formed (RFC 9114 §4.3): lower-case names, pseudo-headers first, known and unique. */
export function isWellFormed(
  fields: readonly HeaderField[],
  allowedPseudo: ReadonlySet<string>,
): boolean {
  const seen = new Set<string>();
  let regular = false;
  for (const [name] of fields) {
    if (name.length === 0 || name !== name.toLowerCase()) return false;
    if (name.startsWith(":")) {
      if (regular || !allowedPseudo.has(name) || seen.has(name)) return false;
      seen.add(name);
    } else {
      regular = true;
      if (
        name === "connection" || name === "keep-alive" || name === "transfer-encoding" ||
        name === "upgrade" || name === "proxy-connection"
      ) return false;
    }
  }
  return true;
}
