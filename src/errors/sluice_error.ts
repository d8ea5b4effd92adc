import type { ErrorCode } from "./codes.ts";
import { statusOf } from "./codes.ts";

/** How an error answers an HTTP request: RFC 9457 problem details and response headers. */
export interface ErrorAnswer {
  /** HTTP status. */
  readonly status: number;
  /** The problem's `detail`, shown to the client. */
  readonly detail: string;
  /** Extra response headers (Retry-After, WWW-Authenticate). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Extension members beside `code` (RFC 9457 §3.2), such as a 410's `first`. */
  readonly extensions?: Readonly<Record<string, string | number>>;
}

/**
 * The base of every error sluice throws for callers to catch: `code` is a
 * stable snake_case condition from {@link ERROR_CODES}, the same spelling in
 * every layer, so callers branch on it (or on the class) and never on a
 * message or a built-in error type.
 *
 * @example
 * ```ts
 * try {
 *   await subscribe();
 * } catch (error) {
 *   if (error instanceof SluiceError && error.code === "not_found") return undefined;
 *   throw error;
 * }
 * ```
 */
export class SluiceError extends Error {
  /** Stable condition, snake_case. */
  readonly code: ErrorCode;

  /** Makes the error; `message` says what happened, quoting the bad value. */
  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }

  /**
   * The HTTP answer when a client may be told of this error; undefined for a
   * failure inside, which is logged and answered 500 without detail.
   */
  answer(): ErrorAnswer | undefined {
    return undefined;
  }
}

/**
 * An error a client caused and may be told about: its HTTP answer is its
 * code's status with its message as the detail. A client's bad input is one
 * of these (`invalid_request`, 400) by its class, never by a built-in type.
 */
export class ClientError extends SluiceError {
  /** The answer: the code's status (400 for a code without one) and the message. */
  override answer(): ErrorAnswer | undefined {
    return { status: statusOf(this.code) ?? 400, detail: this.message };
  }
}

/**
 * A request the service cannot act on as asked: a malformed path, group,
 * offset or header, or an operation the resource does not allow (400).
 */
export class InvalidRequestError extends ClientError {
  /** The codes this class carries. */
  static readonly codes = ["invalid_request"] as const;
  /** Stable code for callers. */
  declare readonly code: "invalid_request";

  /** Builds the error; the message is shown to the client. */
  constructor(message: string, options?: ErrorOptions) {
    super("invalid_request", message, options);
  }
}

/**
 * Runs a parser over a client's text: the `SyntaxError` parsers throw for
 * unparseable text becomes an {@link InvalidRequestError} (`prefix` before
 * its message); anything else, a bug, passes through as it is.
 *
 * @example
 * ```ts
 * const id = clientInput(() => parseGroupId(text), "after: ");
 * ```
 */
export function clientInput<T>(parse: () => T, prefix = ""): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof SyntaxError) {
      throw new InvalidRequestError(`${prefix}${error.message}`, { cause: error });
    }
    throw error;
  }
}
