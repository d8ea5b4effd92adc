import { QMuxProtocolError, TransportCode } from "./errors.ts";

/**
 * The QX_PING sequence numbers of one session: ours count up from 0, and in
 * qmux-02 (`checked`) the peer's requests must increase and its responses
 * answer one we asked.
 */
export class PingSequence {
  readonly #checked: boolean;
  #next = 0n;
  #lastSeen: bigint | undefined;

  /** Starts at 0; `checked` enforces qmux-02's rules on the peer's pings. */
  constructor(checked: boolean) {
    this.#checked = checked;
  }

  /** The sequence of our next request. */
  next(): bigint {
    return this.#next++;
  }

  /** The peer asked with `seq`: throws a protocol violation when it does not increase. */
  asked(seq: bigint): void {
    if (!this.#checked) return;
    if (this.#lastSeen !== undefined && seq <= this.#lastSeen) {
      throw new QMuxProtocolError(
        TransportCode.PROTOCOL_VIOLATION,
        `QX_PING request ${seq} does not increase`,
      );
    }
    this.#lastSeen = seq;
  }

  /** The peer answered `seq`: throws a protocol violation when we never asked it. */
  answered(seq: bigint): void {
    if (this.#checked && seq >= this.#next) {
      throw new QMuxProtocolError(
        TransportCode.PROTOCOL_VIOLATION,
        `QX_PING response ${seq} was never asked`,
      );
    }
  }
}
