import type { BidiStream, SendStream } from "../session.ts";
import type { StreamPair } from "./connection.ts";

/** The neutral bidirectional stream of a QMux stream pair. */
export function bidiHandle(pair: StreamPair): BidiStream {
  const send = pair.send!;
  return {
    readable: pair.recv!.readable,
    writable: send.writable,
    setSendOrder: (o) => void (send.lane.order = o),
  };
}

/** The neutral send stream of a QMux stream pair opened unidirectional. */
export function sendHandle(pair: StreamPair): SendStream {
  const send = pair.send!;
  return { writable: send.writable, setSendOrder: (o) => void (send.lane.order = o) };
}
