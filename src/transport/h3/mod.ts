/**
 * HTTP/3 as far as WebTransport needs it: frames, QPACK headers, SETTINGS,
 * structured fields, and the connection that hosts WebTransport sessions.
 *
 * @module
 */

export { type HeaderField, HeaderTooLargeError } from "./qpack.ts";
export { H3Code, H3ConnectionError } from "./errors.ts";
export { encodeFrame, FrameType, HTTP2_RESERVED_FRAME_TYPES, wtStreamHeader } from "./frame.ts";
export { H3Connection } from "./connection.ts";
export { headersPayload, headerValue, isWellFormed, readHeaders } from "./headers.ts";
export { supportsWebTransport } from "./settings.ts";
export {
  parseStringItem,
  parseStringList,
  serializeString,
  serializeStringList,
} from "./structured_field.ts";
export { type H3Session, type SessionHost } from "./session_host.ts";
