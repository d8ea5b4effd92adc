/** PROBE: bitrate and RTT reports. */
import { Decoder, Encoder } from "../../wire/mod.ts";
import { encodeMessage } from "./length_prefix.ts";

/** PROBE: bitrate (bits/s) and RTT (ms), 0 = unknown. */
export interface Probe {
  /** Bits per second. */
  readonly bitrate: number;
  /** Smoothed RTT in ms. */
  readonly rtt: number;
}

/** Encodes PROBE. */
export function encodeProbe(m: Probe): Uint8Array<ArrayBuffer> {
  return encodeMessage(new Encoder().varint(m.bitrate).varint(m.rtt));
}

/** Decodes PROBE. */
export function decodeProbe(body: Uint8Array): Probe {
  const d = new Decoder(body);
  const bitrate = d.u53("bitrate");
  const rtt = d.u53("rtt");
  d.end("PROBE");
  return { bitrate, rtt };
}
