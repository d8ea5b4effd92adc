/**
 * HPACK/QPACK Huffman code (RFC 7541 Appendix B). The code is canonical, so
 * the table is fully described by each symbol's code length; the codes are
 * rebuilt from the lengths (sorted by length, then symbol). Lengths are
 * written one base-36 digit per symbol, symbols 0..256 (256 = EOS). The RFC
 * 7541 C.4 vectors in the tests check the result.
 */
const LENGTHS =
  "dnsssssssoussussssssssusssssssss6aacd68baa8b8666555666666678f6cad67777777777777777777777878djde6f" +
  "56565666577666567655677777fbedskmkkmmmnmnnnnnonoomnonnnnlmnmnnomlkmmnnlnmmolmnnllmlnmnnkmmmnmmnq" +
  "qkjmnmpqqqrrqopjlqrrqrollqqsrrrkoklmllnmmppooqnqrqqrrrrrsrrrrrqu";

const EOS = 256;

interface Table {
  readonly codes: Uint32Array;
  readonly lengths: Uint8Array;
  /** Decoding trie: node i has children at [2i] and [2i+1]; values >= 0 are nodes, < 0 are -(symbol+1). */
  readonly trie: Int32Array;
}

let table: Table | undefined;

function buildTable(): Table {
  const lengths = new Uint8Array(257);
  for (let s = 0; s < 257; s++) lengths[s] = parseInt(LENGTHS[s] ?? "0", 36);
  const order = [...lengths.keys()].sort((a, b) => (lengths[a] ?? 0) - (lengths[b] ?? 0) || a - b);
  const codes = new Uint32Array(257);
  let code = 0;
  let prev = lengths[order[0] ?? 0] ?? 0;
  for (const s of order) {
    const len = lengths[s] ?? 0;
    code = code * 2 ** (len - prev);
    prev = len;
    codes[s] = code;
    code++;
  }
  // Build a binary trie; at most 2*257 internal nodes.
  const trie = new Int32Array(2 * 2 * 257).fill(0);
  let nodes = 1;
  for (let s = 0; s < 257; s++) {
    const len = lengths[s] ?? 0;
    const c = codes[s] ?? 0;
    let node = 0;
    for (let i = len - 1; i >= 0; i--) {
      const bit = Math.floor(c / 2 ** i) & 1;
      const slot = node * 2 + bit;
      if (i === 0) {
        trie[slot] = -(s + 1);
      } else {
        if (trie[slot] === 0) trie[slot] = nodes++;
        node = trie[slot] ?? 0;
      }
    }
  }
  return { codes, lengths, trie };
}

function getTable(): Table {
  table ??= buildTable();
  return table;
}

/** Decodes a Huffman-coded string (RFC 7541 §5.2); throws SyntaxError on bad padding or EOS. */
export function huffmanDecode(input: Uint8Array): Uint8Array {
  const { trie } = getTable();
  const out: number[] = [];
  let node = 0;
  let depth = 0; // bits consumed since the last symbol
  let allOnes = true;
  for (const byte of input) {
    for (let i = 7; i >= 0; i--) {
      const bit = (byte >> i) & 1;
      const next = trie[node * 2 + bit] ?? 0;
      depth++;
      if (bit === 0) allOnes = false;
      if (next < 0) {
        const sym = -next - 1;
        if (sym === EOS) throw new SyntaxError("Cannot decode Huffman string: contains EOS");
        out.push(sym);
        node = 0;
        depth = 0;
        allOnes = true;
      } else if (next === 0) {
        throw new SyntaxError("Cannot decode Huffman string: invalid code");
      } else {
        node = next;
      }
    }
  }
  if (depth > 7 || !allOnes) {
    throw new SyntaxError("Cannot decode Huffman string: bad padding");
  }
  return Uint8Array.from(out);
}

/** Encodes bytes with the Huffman code (RFC 7541 §5.2), padding with ones. */
export function huffmanEncode(input: Uint8Array): Uint8Array {
  const { codes, lengths } = getTable();
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const b of input) {
    const len = lengths[b] ?? 0;
    const c = codes[b] ?? 0;
    for (let i = len - 1; i >= 0; i--) {
      acc = (acc << 1) | (Math.floor(c / 2 ** i) & 1);
      bits++;
      if (bits === 8) {
        out.push(acc);
        acc = 0;
        bits = 0;
      }
    }
  }
  if (bits > 0) out.push(((acc << (8 - bits)) | ((1 << (8 - bits)) - 1)) & 0xff);
  return Uint8Array.from(out);
}

/** Length in bytes of the Huffman encoding of `input`. */
export function huffmanEncodedLength(input: Uint8Array): number {
  const { lengths } = getTable();
  let bits = 0;
  for (const b of input) bits += lengths[b] ?? 0;
  return Math.ceil(bits / 8);
}
