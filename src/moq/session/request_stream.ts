/** The requests we open on the peer: a bidi stream read and written from our side. */
import { Sender } from "../sender.ts";
import type { StreamReader } from "../../wire/mod.ts";
import type { SessionCore } from "./core.ts";
import { CONTROL_SEND_ORDER } from "./send_order.ts";

/** Our half of an open request stream. */
export interface RequestStream {
  /** Reads the peer's answer. */
  readonly r: StreamReader;
  /** Writes our request. */
  readonly w: Sender;
}

/** Opens a bidi request stream, sent before any group ({@link CONTROL_SEND_ORDER}). */
export async function openRequest(core: SessionCore): Promise<RequestStream> {
  const stream = await core.transport.openBidi({ sendOrder: CONTROL_SEND_ORDER });
  return { r: core.reader(stream), w: new Sender(stream.writable, core.stats) };
}

/**
 * A long-lived request that `closing` ends (FIN ours, stop reading theirs)
 * whether it is already open or not yet.
 */
export class ClosableRequest {
  readonly #closing: AbortSignal;
  #stream: RequestStream | undefined;

  /** Starts listening for `closing`. */
  constructor(closing: AbortSignal) {
    this.#closing = closing;
    closing.addEventListener("abort", this.close, { once: true });
  }

  /** Opens the stream; from now on closing ends it. */
  async open(core: SessionCore): Promise<RequestStream> {
    this.#stream = await openRequest(core);
    return this.#stream;
  }

  /** Ends the stream if it is open (safe to call more than once). */
  readonly close = (): void => {
    this.#stream?.w.close();
    this.#stream?.r.cancel();
  };

  /** Stops listening for `closing`. */
  release(): void {
    this.#closing.removeEventListener("abort", this.close);
  }
}
