import type { Session } from "../session.ts";

/** The subset of the W3C `WebTransport` interface that MoQ libraries such as `@moq/net` use. */
export interface WebTransportLike {
  /** Negotiated protocol. */
  readonly protocol: string;
  /** Already resolved: the session exists. */
  readonly ready: Promise<void>;
  /** Resolves with the close code and reason. */
  readonly closed: Promise<{ closeCode: number; reason: string }>;
  /** Closes the session. */
  close(info?: { closeCode?: number; reason?: string }): void;
  /** Opens a bidirectional stream. */
  createBidirectionalStream(
    options?: { sendOrder?: number },
  ): Promise<{ readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> }>;
  /** Opens a unidirectional stream. */
  createUnidirectionalStream(options?: { sendOrder?: number }): Promise<WritableStream<Uint8Array>>;
  /** Peer-opened bidirectional streams. */
  readonly incomingBidirectionalStreams: ReadableStream<
    { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> }
  >;
  /** Peer-opened unidirectional streams. */
  readonly incomingUnidirectionalStreams: ReadableStream<ReadableStream<Uint8Array>>;
  /** Datagrams, when the session supports them. */
  readonly datagrams?: {
    readonly readable: ReadableStream<Uint8Array>;
    readonly writable: WritableStream<Uint8Array>;
    readonly maxDatagramSize: number;
    createWritable(): WritableStream<Uint8Array>;
  };
}

/**
 * Presents a {@link Session} as a WebTransport-shaped object, so libraries
 * written against the browser API (e.g. `@moq/net`'s `Connection.accept`)
 * run on sluice's transports.
 */
export function asWebTransport(session: Session): WebTransportLike {
  const incomingBidi = new ReadableStream<
    { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> }
  >({
    async pull(controller) {
      const s = await session.acceptBidi();
      if (s) controller.enqueue({ readable: s.readable, writable: s.writable });
      else controller.close();
    },
  }, { highWaterMark: 0 });
  const incomingUni = new ReadableStream<ReadableStream<Uint8Array>>({
    async pull(controller) {
      const s = await session.acceptUni();
      if (s) controller.enqueue(s.readable);
      else controller.close();
    },
  }, { highWaterMark: 0 });

  const out: WebTransportLike = {
    protocol: session.protocol,
    ready: Promise.resolve(),
    closed: session.closed.then((i) => ({ closeCode: i.code, reason: i.reason })),
    close: (info) => session.close(info?.closeCode ?? 0, info?.reason ?? ""),
    async createBidirectionalStream(options) {
      const s = await session.openBidi(
        options?.sendOrder !== undefined ? { sendOrder: options.sendOrder } : {},
      );
      return { readable: s.readable, writable: s.writable };
    },
    async createUnidirectionalStream(options) {
      const s = await session.openUni(
        options?.sendOrder !== undefined ? { sendOrder: options.sendOrder } : {},
      );
      return s.writable;
    },
    incomingBidirectionalStreams: incomingBidi,
    incomingUnidirectionalStreams: incomingUni,
  };

  const send = session.sendDatagram?.bind(session);
  const read = session.readDatagram?.bind(session);
  if (send && read) {
    const createWritable = (): WritableStream<Uint8Array> =>
      // Datagrams are best effort, as in the WebTransport API: a lost one is not an error.
      new WritableStream({ write: (chunk) => send(chunk).catch(() => {}) });
    const datagrams = {
      readable: new ReadableStream<Uint8Array>({
        async pull(controller) {
          const d = await read();
          if (d) controller.enqueue(d);
          else controller.close();
        },
      }, { highWaterMark: 0 }),
      writable: createWritable(),
      get maxDatagramSize(): number {
        return session.maxDatagramSize ?? 0;
      },
      createWritable,
    };
    return { ...out, datagrams };
  }
  return out;
}
