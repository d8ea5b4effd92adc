/**
 * The bottom layer: bytes and wire primitives shared by the transports and
 * the protocols above them. Imports nothing else from `src/`.
 *
 * @module
 */
export { concatBytes } from "./concat.ts";
