/**
 * A {@link Session} over the W3C `WebTransport` object a browser provides,
 * so MoQ runs over the browser's own HTTP/3 stack. Uses no Deno API: this
 * module is what a browser bundle carries instead of sluice's own client.
 */
import { errorText, redactUrl } from "../../error_text/mod.ts";
import { systemTimers, type Timers } from "../../timers/mod.ts";
import { SessionClosedError, StreamError } from "../errors.ts";
import type { BidiStream, RecvStream, SendStream, Session, SessionCloseInfo } from "../session.ts";

/** A send half as the W3C API hands it out: a writable whose priority is `sendOrder`. */
export type WebTransportApiWritable = WritableStream<Uint8Array> & { sendOrder?: number | null };

/** A bidirectional stream as the W3C API hands it out. */
export interface WebTransportApiBidi {
  /** The receive half. */
  readonly readable: ReadableStream<Uint8Array>;
  /** The send half. */
  readonly writable: WebTransportApiWritable;
}

/** The members of the W3C `WebTransport` interface the adapter uses. */
export interface WebTransportApi {
  /** Resolves once the session is established. */
  readonly ready: Promise<unknown>;
  /** Resolves with the close code and reason; rejects when the connection was lost. */
  readonly closed: Promise<{ closeCode?: number; reason?: string }>;
  /** The protocol the server chose from `protocols` (empty or absent when none). */
  readonly protocol?: string;
  /** Closes the session. */
  close(info?: { closeCode?: number; reason?: string }): void;
  /** Opens a bidirectional stream. */
  createBidirectionalStream(options?: { sendOrder?: number }): Promise<WebTransportApiBidi>;
  /** Opens a unidirectional stream. */
  createUnidirectionalStream(options?: { sendOrder?: number }): Promise<WebTransportApiWritable>;
  /** Streams the peer opened. */
  readonly incomingBidirectionalStreams: ReadableStream<WebTransportApiBidi>;
  /** Unidirectional streams the peer opened. */
  readonly incomingUnidirectionalStreams: ReadableStream<ReadableStream<Uint8Array>>;
  /** Unreliable datagrams, both ways (absent where the runtime has none). */
  readonly datagrams?: WebTransportApiDatagrams;
}

/** The W3C `WebTransportDatagramDuplexStream` members the adapter uses. */
export interface WebTransportApiDatagrams {
  /** Datagrams the peer sent. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Datagrams to send (older browsers; newer ones offer `createWritable`). */
  readonly writable?: WritableStream<Uint8Array>;
  /** A writable for datagrams to send. */
  createWritable?(): WritableStream<Uint8Array>;
  /** The largest datagram payload the session can carry now. */
  readonly maxDatagramSize?: number;
}

/** Options of {@linkcode connectWebTransportApi}. */
export interface ConnectWebTransportApiOptions {
  /** Offered as `protocols`, preferred first: the application's protocols (moq's `VERSIONS`). */
  readonly protocols: readonly string[];
  /** Certificates to accept by SHA-256 (self-signed, at most 14 days, ECDSA), as the W3C API takes them. */
  readonly serverCertificateHashes?: readonly {
    algorithm: "sha-256";
    value: ArrayBuffer | ArrayBufferView;
  }[];
  /** Protocol to assume when the browser does not report one (default "moq-lite-04"). */
  readonly defaultProtocol?: string;
  /** Give up when the session is not established within this time (default 10000 ms). */
  readonly timeoutMs?: number;
  /** Abandons the dial. */
  readonly signal?: AbortSignal;
  /** Timers of the dial's deadline (default the system's). */
  readonly timers?: Timers;
}

type WebTransportConstructor = new (url: string, options?: unknown) => WebTransportApi;

/** True when this runtime has a `WebTransport` constructor. */
export function hasWebTransportApi(): boolean {
  return typeof (globalThis as { WebTransport?: unknown }).WebTransport === "function";
}

/**
 * Opens a session with the runtime's own `WebTransport` (a browser's) to an
 * `https://` URL. Rejects with TypeError when the runtime has none, and
 * with {@linkcode SessionClosedError} when the session cannot be established.
 *
 * @example
 * ```ts
 * const session = await connectWebTransportApi(new URL("https://relay.example:4433/"), {
 *   protocols: ["moq-lite-05", "moq-lite-04"],
 * });
 * ```
 */
export async function connectWebTransportApi(
  url: URL,
  options: ConnectWebTransportApiOptions,
): Promise<Session> {
  const Api = (globalThis as { WebTransport?: WebTransportConstructor }).WebTransport;
  if (typeof Api !== "function") {
    throw new TypeError("Cannot open WebTransport: this runtime has no WebTransport object");
  }
  options.signal?.throwIfAborted();
  const init: Record<string, unknown> = { protocols: [...options.protocols] };
  if (options.serverCertificateHashes) {
    init.serverCertificateHashes = options.serverCertificateHashes.map((h) => ({ ...h }));
  }
  const wt = new Api(url.href, init);
  // A failed dial rejects `closed` too; nobody else listens to it yet.
  wt.closed.catch(() => {});
  const timers = options.timers ?? systemTimers;
  let timer: unknown;
  const onAbort = () => wt.close();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await Promise.race([
      wt.ready,
      new Promise((_, reject) => {
        timer = timers.setTimeout(
          () => reject(new Error(`no session within ${options.timeoutMs ?? 10_000} ms`)),
          options.timeoutMs ?? 10_000,
        );
      }),
    ]);
  } catch (err) {
    try {
      wt.close();
    } catch {
      // already failed
    }
    throw new SessionClosedError(
      `Cannot open WebTransport to "${redactUrl(url)}": ${errorText(err)}`,
      {
        cause: err,
      },
    );
  } finally {
    if (timer !== undefined) timers.clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
  return webTransportApiSession(
    wt,
    url,
    wt.protocol || (options.defaultProtocol ?? "moq-lite-04"),
  );
}

/** Wraps an established W3C `WebTransport` as a {@link Session} speaking `protocol`. */
export function webTransportApiSession(wt: WebTransportApi, url: URL, protocol: string): Session {
  return new ApiSession(wt, url, protocol);
}

class ApiSession implements Session {
  readonly transport = "webtransport" as const;
  readonly protocol: string;
  readonly url: URL;
  readonly remote: string;
  readonly closed: Promise<SessionCloseInfo>;
  readonly #wt: WebTransportApi;
  readonly #bidi: ReadableStreamDefaultReader<WebTransportApiBidi>;
  readonly #uni: ReadableStreamDefaultReader<ReadableStream<Uint8Array>>;
  #datagramReader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  #datagramWriter: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #ended = false;

  constructor(wt: WebTransportApi, url: URL, protocol: string) {
    this.#wt = wt;
    this.url = url;
    this.protocol = protocol;
    this.remote = url.host;
    this.#bidi = wt.incomingBidirectionalStreams.getReader();
    this.#uni = wt.incomingUnidirectionalStreams.getReader();
    this.closed = wt.closed.then(
      (info) => ({ code: info?.closeCode ?? 0, reason: info?.reason ?? "" }),
      (err) => ({ code: 0, reason: errorText(err), dropped: true }),
    ).finally(() => {
      this.#ended = true;
    });
  }

  async openBidi(options?: { sendOrder?: number }): Promise<BidiStream> {
    try {
      const s = await this.#wt.createBidirectionalStream(orderOf(options));
      return { readable: s.readable, writable: s.writable, setSendOrder: orderSetter(s.writable) };
    } catch (err) {
      throw this.#closedError(err);
    }
  }

  async openUni(options?: { sendOrder?: number }): Promise<SendStream> {
    try {
      const writable = await this.#wt.createUnidirectionalStream(orderOf(options));
      return { writable, setSendOrder: orderSetter(writable) };
    } catch (err) {
      throw this.#closedError(err);
    }
  }

  async acceptBidi(): Promise<BidiStream | undefined> {
    try {
      const { value, done } = await this.#bidi.read();
      if (done || !value) return undefined;
      return { readable: value.readable, writable: value.writable };
    } catch {
      return undefined; // the session ended
    }
  }

  async acceptUni(): Promise<RecvStream | undefined> {
    try {
      const { value, done } = await this.#uni.read();
      return done || !value ? undefined : { readable: value };
    } catch {
      return undefined;
    }
  }

  /** Largest datagram payload now; 0 where the browser offers no datagrams. */
  get maxDatagramSize(): number {
    return this.#wt.datagrams?.maxDatagramSize ?? 0;
  }

  async readDatagram(): Promise<Uint8Array | undefined> {
    const datagrams = this.#wt.datagrams;
    if (!datagrams || this.#ended) return undefined;
    this.#datagramReader ??= datagrams.readable.getReader();
    try {
      const { value, done } = await this.#datagramReader.read();
      return done ? undefined : value;
    } catch {
      return undefined; // the session ended
    }
  }

  async sendDatagram(data: Uint8Array): Promise<void> {
    const datagrams = this.#wt.datagrams;
    if (!datagrams) return;
    if (!this.#datagramWriter) {
      const writable = datagrams.createWritable?.() ?? datagrams.writable;
      if (!writable) return;
      this.#datagramWriter = writable.getWriter();
    }
    try {
      await this.#datagramWriter.write(data);
    } catch (err) {
      throw this.#closedError(err);
    }
  }

  translateError(err: unknown): unknown {
    if (err instanceof StreamError || err instanceof SessionClosedError) return err;
    const e = err as { name?: string; source?: string; streamErrorCode?: number | null };
    if (e?.name === "WebTransportError" && e.source === "stream") {
      return new StreamError("reset", e.streamErrorCode ?? 0, errorText(err), { cause: err });
    }
    if (e?.name === "WebTransportError" || this.#ended) return this.#closedError(err);
    return err;
  }

  close(code: number, reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    try {
      this.#wt.close({ closeCode: code, reason });
    } catch {
      // closing an already failed session
    }
  }

  #closedError(err: unknown): SessionClosedError {
    return new SessionClosedError(`WebTransport session ended: ${errorText(err)}`, { cause: err });
  }
}

function orderOf(options?: { sendOrder?: number }): { sendOrder?: number } {
  return options?.sendOrder === undefined ? {} : { sendOrder: options.sendOrder };
}

function orderSetter(writable: WebTransportApiWritable): (order: number) => void {
  return (order) => {
    writable.sendOrder = order;
  };
}
