/**
 * A native QUIC connection (`Deno.QuicConn`, accepted or dialed) behind the
 * transport-neutral {@linkcode Session}.
 *
 * Deno 2.9 facts this code respects: a `QuicIncoming`'s address getters
 * consume it, so addresses are read from the connection; outgoing streams use
 * `waitUntilAvailable` so the peer's stream limit applies back-pressure
 * instead of throwing; Deno's stream errors are translated by
 * `quic_errors.ts`.
 */
import { errorText } from "../../error_text/mod.ts";
import { formatAddr } from "../address.ts";
import type {
  BidiStream,
  RecvStream,
  SendStream,
  Session,
  SessionCloseInfo,
  StreamOptions,
} from "../session.ts";
import { SessionClosedError } from "../errors.ts";
import { fromDenoQuicError } from "./quic_errors.ts";

/** Options for {@linkcode quicSession}. */
export interface QuicSessionOptions {
  /** The URL the client dialed, when known (client side). */
  readonly url?: URL;
}

class QuicSession implements Session {
  readonly transport = "quic" as const;
  readonly protocol: string;
  readonly url: URL | undefined;
  readonly remote: string;
  readonly closed: Promise<SessionCloseInfo>;
  readonly #conn: Deno.QuicConn;
  readonly #bidi: ReadableStreamDefaultReader<Deno.QuicBidirectionalStream>;
  readonly #uni: ReadableStreamDefaultReader<Deno.QuicReceiveStream>;
  #ended = false;
  #local: SessionCloseInfo | undefined;

  constructor(conn: Deno.QuicConn, options: QuicSessionOptions) {
    this.#conn = conn;
    this.protocol = conn.protocol ?? "";
    this.url = options.url;
    let remote = "";
    try {
      remote = formatAddr(conn.remoteAddr);
    } catch {
      // connection already gone; keep an empty address
    }
    this.remote = remote;
    this.#bidi = conn.incomingBidirectionalStreams.getReader();
    this.#uni = conn.incomingUnidirectionalStreams.getReader();
    // Deno reports a locally closed connection without our code: prefer what we sent.
    this.closed = conn.closed.then(
      (info): SessionCloseInfo => this.#local ?? { code: info.closeCode, reason: info.reason },
      (err: unknown): SessionCloseInfo =>
        this.#local ?? {
          code: 0,
          reason: errorText(err),
          dropped: true,
        },
    ).finally(() => {
      this.#ended = true;
    });
  }

  get maxDatagramSize(): number {
    try {
      return this.#conn.maxDatagramSize;
    } catch {
      // The connection is gone: no datagram fits.
      return 0;
    }
  }

  async openBidi(options?: StreamOptions): Promise<BidiStream> {
    const s = await this.#open(() => this.#conn.createBidirectionalStream(openOptions(options)));
    return {
      readable: s.readable,
      writable: s.writable,
      setSendOrder: (order: number) => setOrder(s.writable, order),
    };
  }

  // Not through #open: a relay opens one of these per group per subscriber, and the async
  // wrapper, its closure and the order setter's closure were work for every one of them.
  openUni(options?: StreamOptions): Promise<SendStream> {
    try {
      return this.#conn.createUnidirectionalStream(openOptions(options)).then(
        toSend,
        this.#openFailed,
      );
    } catch (err) {
      return Promise.reject(this.#openError(err));
    }
  }

  translateError(err: unknown): unknown {
    return fromDenoQuicError(err);
  }

  // Opens fail with neutral errors; Deno words an open on a closed
  // connection as a plain Error ("closed"), so our own state decides that one.
  async #open<T>(open: () => Promise<T>): Promise<T> {
    try {
      return await open();
    } catch (err) {
      throw this.#openError(err);
    }
  }

  #openError(err: unknown): unknown {
    const translated = fromDenoQuicError(err);
    if (translated !== err || !this.#ended) return translated;
    return new SessionClosedError(errorText(err), { cause: err });
  }

  readonly #openFailed = (err: unknown): never => {
    throw this.#openError(err);
  };

  // The accepts and the datagram read are plain functions over module-level callbacks, not
  // async functions: each session waits in all three for its whole life, and a suspended async
  // function holds a frame, its registers and two callbacks; a .then holds one reaction.
  acceptBidi(): Promise<BidiStream | undefined> {
    if (this.#ended) return NOTHING;
    // A failed read is the connection ending: no more streams to accept.
    return this.#bidi.read().then(toBidi, nothing);
  }

  acceptUni(): Promise<RecvStream | undefined> {
    if (this.#ended) return NOTHING;
    return this.#uni.read().then(toRecv, nothing);
  }

  async sendDatagram(data: Uint8Array): Promise<void> {
    try {
      await this.#conn.sendDatagram(data);
    } catch {
      // best effort
    }
  }

  readDatagram(): Promise<Uint8Array | undefined> {
    if (this.#ended) return NOTHING;
    try {
      // A failed read is the connection ending: no more datagrams.
      return this.#conn.readDatagram().then(undefined, nothing);
    } catch {
      return NOTHING;
    }
  }

  close(code: number, reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#local = { code, reason };
    try {
      this.#conn.close({ closeCode: code, reason });
    } catch {
      // already closed
    }
  }
}

const NOTHING: Promise<undefined> = Promise.resolve(undefined);
const nothing = (): undefined => undefined;

function toBidi(
  r: ReadableStreamReadResult<Deno.QuicBidirectionalStream>,
): BidiStream | undefined {
  if (r.done) return undefined;
  const s = r.value;
  return {
    readable: s.readable,
    writable: s.writable,
    setSendOrder: (order: number) => setOrder(s.writable, order),
  };
}

/** A send stream whose order setter is a method, not a closure made for each stream. */
class QuicSendStream implements SendStream {
  readonly writable: Deno.QuicSendStream;

  constructor(writable: Deno.QuicSendStream) {
    this.writable = writable;
  }

  setSendOrder(order: number): void {
    setOrder(this.writable, order);
  }
}

function toSend(s: Deno.QuicSendStream): SendStream {
  return new QuicSendStream(s);
}

function toRecv(r: ReadableStreamReadResult<Deno.QuicReceiveStream>): RecvStream | undefined {
  return r.done ? undefined : { readable: r.value };
}

// Outgoing streams wait for the peer's stream limit instead of failing on it.
// A new stream's order is already 0; leaving it out saves Deno an op per stream.
function openOptions(options: StreamOptions | undefined): Deno.QuicSendStreamOptions {
  const order = options?.sendOrder ?? 0;
  return order === 0 ? WAIT_FOR_CREDIT : { sendOrder: order, waitUntilAvailable: true };
}

const WAIT_FOR_CREDIT: Deno.QuicSendStreamOptions = { waitUntilAvailable: true };

function setOrder(stream: Deno.QuicSendStream, order: number): void {
  try {
    stream.sendOrder = order;
  } catch {
    // stream finished
  }
}

/**
 * Wraps an established `Deno.QuicConn` (accepted by a server or dialed by a
 * client) as a {@linkcode Session}. The combined listener calls this for
 * connections whose ALPN is a moq-lite version.
 */
export function quicSession(conn: Deno.QuicConn, options: QuicSessionOptions = {}): Session {
  return new QuicSession(conn, options);
}
