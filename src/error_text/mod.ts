/**
 * Thrown values as text, for messages and logs in every layer, with
 * credentials in URLs redacted. This module imports nothing else, so the wire layer, the transports, configuration and the
 * services can all use it.
 *
 * @module
 */

import { redactText } from "./redact.ts";

export { redactText, redactUrl } from "./redact.ts";

/**
 * The message of an error, or the thrown value as text when it is not an
 * Error; a credential in a URL it quotes (`jwt=…`) is redacted, so the text
 * is safe for logs and answers.
 */
export function errorText(err: unknown): string {
  return redactText(err instanceof Error ? err.message : String(err));
}

/** An error's stack when it has one (else its message), or the thrown value as text: for logs. */
export function errorStack(err: unknown): string {
  return redactText(err instanceof Error ? (err.stack ?? err.message) : String(err));
}
