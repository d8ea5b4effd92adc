/**
 * The bottom layer: bytes and wire primitives shared by the transports and
 * the protocols above them. Imports nothing else from `src/`.
 *
 * @module
 */
export { BackpressureQueue } from "./backpressure_queue.ts";
export { concatBytes } from "./concat.ts";
export { DecodeError } from "./decode_error.ts";
export { Decoder } from "./decoder.ts";
export { DropOldestQueue } from "./drop_oldest_queue.ts";
export { Encoder } from "./encoder.ts";
export { type ByteCounter, StreamReader } from "./stream_reader.ts";
export { decodeLeadingOnes, encodeLeadingOnes, leadingOnesSize } from "./leading_ones.ts";
export {
  decodeVarint,
  decodeVarintBig,
  encodeVarint,
  VARINT_MAX,
  varintSize,
  writeVarint,
  zigzagDecode,
  zigzagEncode,
} from "./varint.ts";
