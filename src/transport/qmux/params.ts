/**
 * QX_TRANSPORT_PARAMETERS: the limits each side grants the other (QUIC v1
 * transport parameters, RFC 9000 §18.2, plus QMux's max_record_size and
 * the datagram and reset_stream_at extensions). Absent limits are 0.
 */
import { DecodeError, Decoder, Encoder, varintSize } from "../../wire/mod.ts";
import { QMuxProtocolError, TransportCode } from "./errors.ts";
import { usesRecords, type WireFormat } from "./subprotocol.ts";

/** The smallest (and default) max_record_size of qmux-01 and later. */
export const MIN_RECORD_SIZE = 16382;

/** One side's transport parameters. Numbers; values beyond 2^53-1 clamp. */
export interface TransportParams {
  /** Milliseconds without a received frame before the session is dropped (0: none). */
  readonly maxIdleTimeout: number;
  /** Connection receive window in bytes. */
  readonly initialMaxData: number;
  /** Window of bidi streams the sender of these parameters opened. */
  readonly initialMaxStreamDataBidiLocal: number;
  /** Window of bidi streams the receiver of these parameters opens. */
  readonly initialMaxStreamDataBidiRemote: number;
  /** Window of uni streams. */
  readonly initialMaxStreamDataUni: number;
  /** Bidi streams the receiver may open. */
  readonly initialMaxStreamsBidi: number;
  /** Uni streams the receiver may open. */
  readonly initialMaxStreamsUni: number;
  /** Largest DATAGRAM frame accepted (0: datagrams off). */
  readonly maxDatagramFrameSize: number;
  /** Largest record (WebSocket message) accepted, qmux-01 and later. */
  readonly maxRecordSize: number;
  /** RESET_STREAM_AT accepted (qmux-02). */
  readonly resetStreamAt: boolean;
}

const Id = {
  MAX_IDLE_TIMEOUT: 0x01n,
  INITIAL_MAX_DATA: 0x04n,
  BIDI_LOCAL: 0x05n,
  BIDI_REMOTE: 0x06n,
  UNI: 0x07n,
  MAX_STREAMS_BIDI: 0x08n,
  MAX_STREAMS_UNI: 0x09n,
  RESET_STREAM_AT: 0x1dn,
  MAX_DATAGRAM_FRAME_SIZE: 0x20n,
  MAX_RECORD_SIZE: 0x0571c59429cd0845n,
  APPLICATION_PROTOCOLS: 0x3d4f9c2a8b1e6075n,
} as const;

type IntKey = Exclude<keyof TransportParams, "resetStreamAt">;

const INT_PARAMS: readonly (readonly [bigint, IntKey])[] = [
  [Id.MAX_IDLE_TIMEOUT, "maxIdleTimeout"],
  [Id.INITIAL_MAX_DATA, "initialMaxData"],
  [Id.BIDI_LOCAL, "initialMaxStreamDataBidiLocal"],
  [Id.BIDI_REMOTE, "initialMaxStreamDataBidiRemote"],
  [Id.UNI, "initialMaxStreamDataUni"],
  [Id.MAX_STREAMS_BIDI, "initialMaxStreamsBidi"],
  [Id.MAX_STREAMS_UNI, "initialMaxStreamsUni"],
  [Id.MAX_DATAGRAM_FRAME_SIZE, "maxDatagramFrameSize"],
  [Id.MAX_RECORD_SIZE, "maxRecordSize"],
];

/** QUIC v1 parameters that make no sense without QUIC's handshake: receiving one is fatal. */
const FORBIDDEN = new Set([0x00n, 0x02n, 0x03n, 0x0an, 0x0bn, 0x0cn, 0x0dn, 0x0en, 0x0fn, 0x10n]);

/** Parameters before the peer sent any: no credit at all. */
export const NO_PARAMS: TransportParams = {
  maxIdleTimeout: 0,
  initialMaxData: 0,
  initialMaxStreamDataBidiLocal: 0,
  initialMaxStreamDataBidiRemote: 0,
  initialMaxStreamDataUni: 0,
  initialMaxStreamsBidi: 0,
  initialMaxStreamsUni: 0,
  maxDatagramFrameSize: 0,
  maxRecordSize: MIN_RECORD_SIZE,
  resetStreamAt: false,
};

/**
 * Encodes `params` as sent in `format`: zero values are omitted,
 * max_datagram_frame_size only on qmux-01/02, reset_stream_at only on
 * qmux-02 (the byte layout @moq/qmux 0.3.3 sends).
 */
export function encodeTransportParams(params: TransportParams, format: WireFormat): Uint8Array {
  const records = usesRecords(format);
  const e = new Encoder(64);
  for (const [id, key] of INT_PARAMS) {
    const value = params[key];
    if (value === 0) continue;
    if (!records && key === "maxDatagramFrameSize") continue;
    e.varint(id).varint(varintSize(value)).varint(value);
  }
  if (params.resetStreamAt && format === "qmux-02") e.varint(Id.RESET_STREAM_AT).varint(0);
  return e.finish();
}

function paramError(message: string): QMuxProtocolError {
  return new QMuxProtocolError(TransportCode.TRANSPORT_PARAMETER_ERROR, message);
}

/** Decodes a peer's parameters; forbidden, repeated or malformed ones throw TRANSPORT_PARAMETER_ERROR. */
export function decodeTransportParams(payload: Uint8Array, format: WireFormat): TransportParams {
  const out: { -readonly [K in keyof TransportParams]: TransportParams[K] } = { ...NO_PARAMS };
  const seen = new Set<bigint>();
  const d = new Decoder(payload);
  try {
    while (d.remaining > 0) {
      const id = d.u62("parameter id");
      const value = d.lengthPrefixed("parameter value", 1024);
      if (FORBIDDEN.has(id)) {
        throw paramError(`Transport parameter "0x${id.toString(16)}" is forbidden`);
      }
      if (id === Id.APPLICATION_PROTOCOLS) {
        throw paramError("Transport parameter application_protocols is not allowed over WebSocket");
      }
      const known = INT_PARAMS.find(([k]) => k === id);
      if (!known && id !== Id.RESET_STREAM_AT) continue; // unknown ids are ignored (RFC 9000 §18.1)
      if (seen.has(id)) throw paramError(`Transport parameter "0x${id.toString(16)}" is repeated`);
      seen.add(id);
      if (id === Id.RESET_STREAM_AT) {
        if (value.length !== 0) throw paramError("Transport parameter reset_stream_at has a value");
        out.resetStreamAt = true;
        continue;
      }
      const v = new Decoder(value);
      const n = v.u62("parameter value");
      v.end("parameter value");
      out[known![1]] = n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
    }
  } catch (err) {
    if (err instanceof DecodeError) throw paramError(`Bad transport parameters: ${err.message}`);
    throw err;
  }
  if (usesRecords(format) && out.maxRecordSize < MIN_RECORD_SIZE) {
    throw paramError(`max_record_size "${out.maxRecordSize}" is below ${MIN_RECORD_SIZE}`);
  }
  return out;
}
