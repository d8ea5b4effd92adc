/** A peer sent bytes that do not decode: the stream (or session) carrying them must end. */
export class DecodeError extends Error {
  /** Stable kind: "truncated" (ran out of bytes), "invalid" (bad value), "trailing" (extra bytes), "too-large". */
  readonly kind: "truncated" | "invalid" | "trailing" | "too-large";
  /** Makes a decode error of the given kind. */
  constructor(kind: DecodeError["kind"], message: string) {
    super(message);
    this.name = "DecodeError";
    this.kind = kind;
  }
}
