const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The credential in an `Authorization` header value, or undefined when the
 * header is absent or not of the Bearer scheme (RFC 6750 §2.1).
 */
export function extractBearer(header: string | null | undefined): string | undefined {
  if (header === null || header === undefined) return undefined;
  return BEARER.exec(header)?.[1];
}

/** The credential in a relay session URL's `jwt` query parameter, or undefined when absent. */
export function tokenFromUrl(url: URL | string): string | undefined {
  let parsed: URL;
  try {
    parsed = typeof url === "string" ? new URL(url) : url;
  } catch {
    // Not a URL: there is no credential in it.
    return undefined;
  }
  // A parse of its own rather than `searchParams`, which the URL would keep (a relay session's
  // URL lives as long as the session) with a second copy of the credential in it.
  const token = new URLSearchParams(parsed.search).get("jwt");
  return token === null || token === "" ? undefined : token;
}
