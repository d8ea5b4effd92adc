/** Query parameters that carry a credential (the relay's `jwt`, and the usual OAuth names). */
const CREDENTIAL_PARAMETERS = ["jwt", "token", "access_token"] as const;

/** What a credential's value is replaced by. */
const REDACTED = "REDACTED";

// `jwt=<value>` anywhere in text (after `?`, `&`, or the start of a word), value up to a
// delimiter: a URL, a quoted URL or a bare query string all match.
const CREDENTIAL_IN_TEXT = new RegExp(
  `([?&;\\s"'(]|^)(${CREDENTIAL_PARAMETERS.join("|")})=[^&#\\s"')]*`,
  "gi",
);

/**
 * `url` as text for a log line or an error message, every credential query
 * parameter's value replaced by `REDACTED`.
 *
 * @example
 * ```ts
 * redactUrl(new URL("moqt://relay:4433/?peer=a&jwt=eyJ...")); // "moqt://relay:4433/?peer=a&jwt=REDACTED"
 * ```
 */
export function redactUrl(url: URL | string): string {
  let parsed: URL;
  try {
    parsed = new URL(typeof url === "string" ? url : url.href);
  } catch {
    return redactText(String(url));
  }
  for (const name of CREDENTIAL_PARAMETERS) {
    if (parsed.searchParams.has(name)) parsed.searchParams.set(name, REDACTED);
  }
  return parsed.href;
}

/** `text` with the value of every `jwt=`/`token=`/`access_token=` in it replaced by `REDACTED`. */
export function redactText(text: string): string {
  return text.replace(
    CREDENTIAL_IN_TEXT,
    (_m, before: string, name: string) => `${before}${name}=${REDACTED}`,
  );
}
