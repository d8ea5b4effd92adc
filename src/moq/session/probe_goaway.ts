/** Session-level control streams: the peer's PROBE (held open) and GOAWAY in both directions. */
import { concatBytes, encodeVarint, type StreamReader } from "../../wire/mod.ts";
import {
  BidiType,
  decodeGoaway,
  decodeProbe,
  encodeGoaway,
  MAX_CONTROL_MESSAGE,
} from "../codec/mod.ts";
import type { Sender } from "../sender.ts";
import type { SessionCore } from "./core.ts";
import { openRequest } from "./request_stream.ts";

/** Reads the peer's PROBE stream until it ends, answering nothing. */
export async function holdProbe(r: StreamReader, w: Sender): Promise<void> {
  // We measure nothing, so we never answer; but never reset it either
  // (@moq/lite closes the whole connection when its probe stream is reset).
  try {
    while (!(await r.done())) decodeProbe(await r.message("PROBE", MAX_CONTROL_MESSAGE));
  } finally {
    await w.close();
  }
}

/** Reads the peer's GOAWAY and resolves `session.goaway` with its URI. */
export async function receiveGoaway(core: SessionCore, r: StreamReader, w: Sender): Promise<void> {
  const m = decodeGoaway(await r.message("GOAWAY", MAX_CONTROL_MESSAGE));
  core.resolveGoaway(m.uri);
  try {
    while (!(await r.done())) await r.bytes(1);
  } finally {
    await w.close();
  }
}

/** Tells the peer to move to `uri` (GOAWAY). */
export async function sendGoaway(core: SessionCore, uri: string): Promise<void> {
  const { r, w } = await openRequest(core);
  try {
    await w.write(concatBytes([encodeVarint(BidiType.Goaway), encodeGoaway({ uri })]));
  } finally {
    await w.close();
    r.cancel();
  }
}
