/** A ledger group identifier: the ledger epoch and the group's sequence in it. */
export interface GroupId {
  /** Ledger epoch, from 1. This version writes every track in epoch 1. */
  readonly epoch: number;
  /** Sequence of the group within its epoch, from 0. */
  readonly seq: number;
}

const MAX_SEQ = Number.MAX_SAFE_INTEGER;
// 16 digits hold every safe integer (2^53-1 has 16); larger values are
// refused by the range checks below.
const PATTERN = /^e(\d{1,16})-g(\d{1,16})$/;

/**
 * Formats a group identifier as `e%06d-g%08d`, the text clients see.
 *
 * @example
 * ```ts
 * formatGroupId({ epoch: 1, seq: 0 }); // "e000001-g00000000"
 * ```
 */
export function formatGroupId(id: GroupId): string {
  return `e${String(id.epoch).padStart(6, "0")}-g${String(id.seq).padStart(8, "0")}`;
}

/**
 * Parses `e<epoch>-g<seq>` (padded or not). Throws `SyntaxError` for any
 * other text, so callers can answer 400 with the message.
 */
export function parseGroupId(text: string): GroupId {
  const m = PATTERN.exec(text);
  if (!m) {
    throw new SyntaxError(`Cannot parse group "${text}": expected the form e000001-g00000000`);
  }
  const epoch = Number(m[1]);
  const seq = Number(m[2]);
  if (epoch < 1 || epoch > MAX_SEQ) {
    throw new SyntaxError(`Cannot parse group "${text}": epoch is out of range`);
  }
  if (seq > MAX_SEQ) {
    throw new SyntaxError(`Cannot parse group "${text}": sequence is out of range`);
  }
  return { epoch, seq };
}

/** Orders two group identifiers in commit order (negative when `a` is older). */
export function compareGroupIds(a: GroupId, b: GroupId): number {
  return a.epoch !== b.epoch ? a.epoch - b.epoch : a.seq - b.seq;
}
