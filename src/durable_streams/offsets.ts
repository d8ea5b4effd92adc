/**
 * Offsets of the protocol: `<epoch>_<position>`, each 16 decimal digits, so
 * they sort as text in stream order. The position of a record is the MoQ
 * group sequence it was published as (ledger sequence + 1) for a stream
 * that is not a fork; epoch 1 is the ledger's only epoch, and epoch 0 names
 * the point before every record (like `after=e000000-g00000000`).
 */
export type OffsetQuery =
  | { readonly kind: "start" }
  | { readonly kind: "now" }
  | { readonly kind: "at"; readonly position: number };

const EPOCH = "0000000000000001";
const TOKEN = /^(\d{16})_(\d{16})$/;

/** The offset text of a position. */
export function formatOffset(position: number): string {
  return `${EPOCH}_${String(position).padStart(16, "0")}`;
}

/**
 * Parses an `offset` query value: `-1` (or absent) is the start, `now` the
 * tail, anything else must be an offset this server minted. Throws
 * `SyntaxError` for anything else.
 */
export function parseOffset(text: string | null): OffsetQuery {
  if (text === null || text === "-1") return { kind: "start" };
  if (text === "now") return { kind: "now" };
  const match = TOKEN.exec(text);
  if (!match) throw new SyntaxError(`Offset "${text}" is not one this server gave out`);
  const epoch = Number(match[1]);
  const position = Number(match[2]);
  if (!Number.isSafeInteger(position)) throw new SyntaxError(`Offset "${text}" is out of range`);
  if (epoch === 0) return { kind: "start" };
  if (epoch > 1) return { kind: "at", position: Number.MAX_SAFE_INTEGER };
  return { kind: "at", position };
}
