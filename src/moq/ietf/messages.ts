/**
 * The IETF control messages sluice exchanges, encoded and decoded per draft
 * (14, 16 and 20: each difference a branch inside the function rather than a
 * copy of the protocol). Decoders throw `DecodeError` on malformed bytes.
 */
export * from "./message_fields.ts";
export * from "./setup_messages.ts";
export * from "./subscribe_messages.ts";
export * from "./request_messages.ts";
