/**
 * The Durable Streams protocol (ElectricSQL's HTTP protocol for durable,
 * resumable streams) served from the funnel's ledger at `/v1/stream/<name>`.
 * Every stream is a ledger track, so it is also a MoQ track with one group
 * per append; see docs/durable-streams.md for the name, offset and storage
 * mapping.
 *
 * @module
 */
export { StreamService, type StreamServiceOptions } from "./service.ts";
export { SINGLE_NAME_TRACK, STREAMS_PREFIX, streamTrack } from "./names.ts";
export { formatOffset, type OffsetQuery, parseOffset } from "./offsets.ts";
export { sealRefusal } from "./seal.ts";
export { pinsStream } from "./meta.ts";
export { ledgerExpiry, StreamExpiry } from "./expiry.ts";
export { RECORD_FLOOR_MS, recordEveryMs } from "./gate.ts";
