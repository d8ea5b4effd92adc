/**
 * Every moq-lite-04 and moq-lite-05 message: encode to wire bytes (with the
 * length prefix), decode from a message body (after the length prefix).
 * Decoders consume the body exactly; anything else is a `DecodeError`.
 * One file per message family; this module gathers them for the session code.
 */
export * from "./version.ts";
export { MAX_CONTROL_MESSAGE, MAX_NAME } from "./length_prefix.ts";
export * from "./setup.ts";
export * from "./announce.ts";
export * from "./track.ts";
export * from "./subscribe.ts";
export * from "./group.ts";
export * from "./fetch.ts";
export * from "./probe.ts";
export * from "./goaway.ts";
export * from "./datagram.ts";
