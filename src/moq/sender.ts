import type { MoqStats } from "./stats.ts";

/** Writes to one stream's send half, counting bytes; its failures stay its own. */
export class Sender {
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #stats: MoqStats;
  #done = false;

  /** Takes the writable's lock. */
  constructor(writable: WritableStream<Uint8Array>, stats: MoqStats) {
    this.#writer = writable.getWriter();
    this.#stats = stats;
  }

  /** Writes bytes; rejects if the stream failed. */
  async write(bytes: Uint8Array): Promise<void> {
    await this.#writer.write(bytes);
    this.#stats.bytesSent += bytes.length;
  }

  /** Finishes the stream (FIN); never throws. */
  async close(): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    try {
      await this.#writer.close();
    } catch {
      // peer stopped reading or the session ended
    }
  }

  /** Abandons the stream (a reset where the transport supports one); never throws. */
  abort(reason?: unknown): void {
    if (this.#done) return;
    this.#done = true;
    // Aborting a stream that already failed has nothing left to report.
    this.#writer.abort(reason).catch(() => {});
  }
}
