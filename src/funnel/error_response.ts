import { type ErrorLog, errorResponse as answerError } from "../http/mod.ts";
import { CommitRefused } from "../ledger/mod.ts";
import { sealRefusal } from "../durable_streams/mod.ts";

export type { ErrorLog } from "../http/mod.ts";

/**
 * A failed request's problem+json answer: a record refused by the track's
 * seal (a Durable Stream that is closed, or of another content type) is
 * first told as the stream's 409; everything else goes through `http/`'s
 * one error map, which Durable Streams shares (each error's class and
 * `code` say its status; anything else is logged and answered 500 without
 * detail).
 */
export function errorResponse(error: unknown, logError?: ErrorLog): Response {
  if (error instanceof CommitRefused && error.seal !== undefined) error = sealRefusal(error.seal);
  return answerError(error, logError);
}
