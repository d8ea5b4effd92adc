import { SluiceError } from "../errors/mod.ts";

/** A peer sent bytes that do not decode: the stream (or session) carrying them must end. */
export class DecodeError extends SluiceError {
  /** The codes this class carries: ran out of bytes, a bad value, extra bytes, over a limit. */
  static readonly codes = ["truncated", "invalid", "trailing", "too_large"] as const;
  /** Stable code. */
  declare readonly code: (typeof DecodeError.codes)[number];
  /** Makes a decode error of the given code. */
  constructor(code: DecodeError["code"], message: string) {
    super(code, message);
  }
}
