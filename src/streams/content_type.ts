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
