/**
 * The two halves of a QMux stream as Web streams. A send half turns writes
 * into STREAM frames as stream and connection credit allow, and a write
 * resolves only once its bytes reached the socket (back-pressure). A
 * receive half hands buffered bytes to the application on demand and
 * counts them consumed only then, so the peer's credit follows the reader.
 */
import { type SessionClosedError, StreamError } from "../errors.ts";
import type { RecvWindow, SendCredit } from "./credit.ts";
import type { Lane } from "./scheduler.ts";

/** What the halves need from their session. */
export interface StreamHost {
  /** Waits for credit and spends up to `want` bytes of it on `half`; throws once the half failed. */
  claim(half: SendHalf, want: number): Promise<number>;
  /** Queues `data` (already paid for) at the half's offset; resolves once sent. */
  send(half: SendHalf, data: Uint8Array, fin: boolean): Promise<void>;
  /** Abandons the half: drops what waits and sends RESET_STREAM with `code`. */
  reset(half: SendHalf, code: number): void;
  /** The application took (or dropped) `n` bytes of `half`: credit for the peer. */
  consumed(half: RecvHalf, n: number): void;
  /** The application no longer reads `half`: STOP_SENDING with `code`. */
  stopSending(half: RecvHalf, code: number): void;
  /** The receive half reached its end (FIN, reset or cancel). */
  recvEnded(half: RecvHalf): void;
}

/**
 * The application error code carried by an abort or cancel reason: a
 * `StreamError`'s `wireCode`, a WebTransportError-like `streamErrorCode`, else 0.
 */
export function resetCodeOf(reason: unknown): number {
  if (reason instanceof StreamError) return reason.wireCode >>> 0;
  if (typeof reason === "object" && reason !== null && "streamErrorCode" in reason) {
    const code = (reason as { streamErrorCode: unknown }).streamErrorCode;
    if (typeof code === "number" && Number.isInteger(code) && code >= 0) return code >>> 0;
  }
  return 0;
}

/** Our sending half of a stream. */
export class SendHalf {
  /** Stream id. */
  readonly id: number;
  /** Stream credit the peer granted. */
  readonly credit: SendCredit;
  /** The scheduler lane (its `order` is the stream's sendOrder). */
  readonly lane: Lane;
  /** Bytes paid for so far: the next frame's offset, and the final size on a reset. */
  offset = 0;
  /** Why the half cannot send any more (peer stop, reset, session end). */
  failure: unknown = undefined;
  /** The Web-standard writable. */
  readonly writable: WritableStream<Uint8Array>;
  #controller!: WritableStreamDefaultController;
  #ended = false;

  /** Made by the session for a stream it opened or accepted. */
  constructor(id: number, credit: SendCredit, lane: Lane, host: StreamHost, maxPayload: number) {
    this.id = id;
    this.credit = credit;
    this.lane = lane;
    this.writable = new WritableStream<Uint8Array>({
      start: (c) => {
        this.#controller = c;
      },
      write: async (chunk) => {
        let sent: Promise<void> | undefined;
        for (let at = 0; at < chunk.length;) {
          const n = await host.claim(this, Math.min(maxPayload, chunk.length - at));
          // Only the last frame's promise is awaited: one that fails makes the later ones fail too.
          sent?.catch(() => {});
          sent = host.send(this, chunk.subarray(at, at + n), false);
          at += n;
        }
        await sent;
      },
      close: async () => {
        if (this.failure !== undefined) throw this.failure;
        this.#ended = true;
        await host.send(this, new Uint8Array(0), true);
      },
      abort: (reason) => {
        if (this.#ended) return;
        this.#ended = true;
        host.reset(this, resetCodeOf(reason));
      },
    });
  }

  /** True once FIN or RESET_STREAM was sent or the half failed. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Ends the half with `err` (peer's STOP_SENDING, session end); writes reject with it. */
  fail(err: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = err;
    this.#ended = true;
    this.credit.wake();
    try {
      this.#controller.error(err);
    } catch {
      // already closed or errored
    }
  }
}

/** Our receiving half of a stream. */
export class RecvHalf {
  /** Stream id. */
  readonly id: number;
  /** The stream window we grant (per stream). */
  readonly window: RecvWindow;
  /** The Web-standard readable: ends at FIN, errors on reset. */
  readonly readable: ReadableStream<Uint8Array>;
  /** True once the application accepted the stream (peer-opened streams). */
  accepted = false;
  /** True once FIN or RESET_STREAM arrived, or the application cancelled. */
  ended = false;
  /** True once the peer sent FIN. */
  finReceived = false;
  readonly #host: StreamHost;
  readonly #chunks: Uint8Array[] = [];
  #buffered = 0;
  #stopped = false;
  #failed = false;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #wake: (() => void) | undefined;

  /** Made by the session for a stream it opened or accepted. */
  constructor(id: number, window: RecvWindow, host: StreamHost) {
    this.id = id;
    this.window = window;
    this.#host = host;
    this.readable = new ReadableStream<Uint8Array>({
      start: (c) => {
        this.#controller = c;
      },
      pull: () => this.#pull(),
      cancel: (reason) => this.#cancel(reason),
    }, { highWaterMark: 0 });
  }

  /** Bytes received and not yet read. */
  get buffered(): number {
    return this.#buffered;
  }

  /** Takes bytes from the peer; returns how many were discarded at once (the application stopped reading). */
  push(data: Uint8Array): number {
    if (this.#stopped || this.#failed) return data.length;
    this.#chunks.push(data);
    this.#buffered += data.length;
    this.#wakeReader();
    return 0;
  }

  /** The peer's FIN. */
  finish(): void {
    this.finReceived = true;
    this.#end();
    this.#wakeReader();
  }

  /** The peer's RESET_STREAM: reads fail with its code; returns the discarded byte count. */
  reset(code: number): number {
    return this.#error(new StreamError("reset", code, `Stream reset by peer with code ${code}`));
  }

  /** The session ended: reads fail with `err`. */
  fail(err: SessionClosedError): void {
    this.#error(err);
  }

  #error(err: unknown): number {
    if (this.#failed || this.#stopped) return 0;
    this.#failed = true;
    const dropped = this.#discard();
    try {
      this.#controller.error(err);
    } catch {
      // already closed
    }
    this.#end();
    this.#wakeReader();
    return dropped;
  }

  #end(): void {
    if (this.ended) return;
    this.ended = true;
    this.#host.recvEnded(this);
  }

  #discard(): number {
    const n = this.#buffered;
    this.#chunks.length = 0;
    this.#buffered = 0;
    return n;
  }

  #wakeReader(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  async #pull(): Promise<void> {
    for (;;) {
      if (this.#failed || this.#stopped) return;
      const chunk = this.#chunks.shift();
      if (chunk) {
        this.#buffered -= chunk.length;
        this.#controller.enqueue(chunk);
        this.#host.consumed(this, chunk.length);
        return;
      }
      if (this.finReceived) {
        this.#controller.close();
        return;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #cancel(reason: unknown): void {
    if (this.#stopped || this.#failed) return;
    this.#stopped = true;
    const dropped = this.#discard();
    if (dropped > 0) this.#host.consumed(this, dropped);
    if (!this.finReceived) this.#host.stopSending(this, resetCodeOf(reason));
    this.#end();
    this.#wakeReader();
  }
}
