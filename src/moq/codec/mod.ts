/**
 * The moq-lite wire codec (drafts 04 and 05): every control message, group
 * header, frame and datagram encoded to bytes and decoded from them.
 *
 * @module
 */

export * from "./messages.ts";
