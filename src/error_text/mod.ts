/**
 * Thrown values as text, for messages and logs in every layer. This module
 * imports nothing, so the wire layer, the transports, configuration and the
 * services can all use it.
 *
 * @module
 */

/** The message of an error, or the thrown value as text when it is not an Error. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** An error's stack when it has one (else its message), or the thrown value as text: for logs. */
export function errorStack(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}
