/** The moq-lite versions and the stream types that open each stream. */

/** The moq-lite versions sluice speaks, by their ALPN / WT-Protocol token. */
export type Version = "moq-lite-05" | "moq-lite-04";
/** All supported versions, preferred first: the ALPN tokens and WT-Protocols handed to the transports. */
export const VERSIONS: readonly Version[] = ["moq-lite-05", "moq-lite-04"];

/** Bidirectional stream types. */
export const BidiType = {
  Announce: 1,
  Subscribe: 2,
  Fetch: 3,
  Probe: 4,
  Goaway: 5,
  Track: 6,
} as const;
/** Unidirectional stream types. */
export const UniType = { Group: 0, Setup: 1 } as const;
