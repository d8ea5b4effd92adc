/** The media type without parameters, lower case: `Text/Plain; charset=utf-8` → `text/plain`. */
export function mediaType(contentType: string): string {
  return contentType.split(";")[0]!.trim().toLowerCase();
}

/** True when two content types name the same media type. */
export function sameType(a: string, b: string): boolean {
  return mediaType(a) === mediaType(b);
}

/** JSON mode: `application/json`. */
export function isJsonType(contentType: string): boolean {
  return mediaType(contentType) === "application/json";
}

/** Data that SSE carries as text: JSON and `text/*`; everything else is base64. */
export function isTextType(contentType: string): boolean {
  const type = mediaType(contentType);
  return type === "application/json" || type.startsWith("text/");
}

/** The content type streams get when PUT names none. */
export const DEFAULT_TYPE = "application/octet-stream";

/**
 * Media types whose bytes a stream's GET serves under the stream's own type:
 * data formats no browser renders as a page or runs as script.
 */
const SERVED_AS_IS = new Set([
  "application/json",
  "application/x-ndjson",
  "application/octet-stream",
  "text/plain",
  "text/csv",
]);

/**
 * The Content-Type a read serves a stream's bytes with: the stream's own for
 * the data types in {@link SERVED_AS_IS}, else `application/octet-stream`,
 * so a stream created as `text/html` or `image/svg+xml` is never active
 * content on the funnel's origin (HEAD and PUT still report the stream's type).
 */
export function servedType(contentType: string): string {
  return SERVED_AS_IS.has(mediaType(contentType)) ? contentType : DEFAULT_TYPE;
}

/** Headers for a read's body: a download, not a page, for anything but JSON. */
export function servedHeaders(contentType: string): Record<string, string> {
  return {
    "content-type": servedType(contentType),
    ...(isJsonType(contentType) ? {} : { "content-disposition": "attachment" }),
  };
}
