/**
 * The IETF MoQ Transport wire codec in one place (for tests, peers and
 * fuzzers): control framing, messages and subgroup objects, drafts 14, 16
 * and 20.
 *
 * @module
 */
export * from "./control.ts";
export * from "./messages.ts";
export * from "./objects.ts";
export * from "./fetch_codec.ts";
export * from "./status_codec.ts";
export * from "./update_codec.ts";
export * from "./properties.ts";
export * from "./publish_codec.ts";
