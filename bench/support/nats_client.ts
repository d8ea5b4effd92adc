/**
 * A minimal NATS client for the side-by-side benchmarks: the text protocol
 * over one TCP connection (CONNECT, PUB, SUB, MSG, PING/PONG), enough for
 * fan-out and JetStream publish acknowledgements. No TLS, no auth, no
 * headers, no reconnect: it talks to a local nats-server only.
 *
 * @module
 */

/** A delivered message. */
export interface NatsMessage {
  readonly subject: string;
  readonly sid: number;
  readonly reply: string | undefined;
  readonly payload: Uint8Array;
}

const CRLF = "\r\n";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One NATS connection. */
export class NatsConnection {
  readonly #conn: Deno.TcpConn;
  readonly #handlers = new Map<number, (m: NatsMessage) => void>();
  readonly #pongs: (() => void)[] = [];
  #out: Uint8Array[] = [];
  #outBytes = 0;
  #flushing = false;
  #nextSid = 1;
  /** Settles when the connection's reader stops. */
  readonly closed: Promise<void>;

  private constructor(conn: Deno.TcpConn) {
    this.#conn = conn;
    this.closed = this.#read().catch(() => {});
  }

  /** Connects to nats-server at `hostname:port`; resolves after the server answered a PING. */
  static async connect(port = 4222, hostname = "127.0.0.1"): Promise<NatsConnection> {
    const conn = await Deno.connect({ hostname, port });
    conn.setNoDelay(true);
    const nats = new NatsConnection(conn);
    nats.#write(`CONNECT {"verbose":false,"pedantic":false,"headers":false}${CRLF}`);
    await nats.ping();
    return nats;
  }

  /** Subscribes to `subject`; returns the subscription id. */
  subscribe(subject: string, onMessage: (m: NatsMessage) => void): number {
    const sid = this.#nextSid++;
    this.#handlers.set(sid, onMessage);
    this.#write(`SUB ${subject} ${sid}${CRLF}`);
    return sid;
  }

  /** Publishes `payload` to `subject` (with a reply subject when given). */
  publish(subject: string, payload: Uint8Array, reply?: string): void {
    this.#write(`PUB ${subject}${reply ? ` ${reply}` : ""} ${payload.byteLength}${CRLF}`);
    this.#push(payload);
    this.#push(encoder.encode(CRLF));
  }

  /** A request: publishes with a fresh reply subject and resolves with the first answer. */
  request(subject: string, payload: Uint8Array): Promise<NatsMessage> {
    const inbox = `_INBOX.${crypto.randomUUID()}`;
    const answer = Promise.withResolvers<NatsMessage>();
    const sid = this.subscribe(inbox, (m) => {
      this.#handlers.delete(sid);
      this.#write(`UNSUB ${sid}${CRLF}`);
      answer.resolve(m);
    });
    this.publish(subject, payload, inbox);
    return answer.promise;
  }

  /** Round trip to the server: everything written before it was processed. */
  ping(): Promise<void> {
    const pong = Promise.withResolvers<void>();
    this.#pongs.push(pong.resolve);
    this.#write(`PING${CRLF}`);
    return pong.promise;
  }

  /** Closes the connection. */
  close(): void {
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
  }

  #write(text: string): void {
    this.#push(encoder.encode(text));
  }

  // Writes are batched per event-loop turn, as the NATS clients do.
  #push(bytes: Uint8Array): void {
    this.#out.push(bytes);
    this.#outBytes += bytes.byteLength;
    if (this.#flushing) return;
    this.#flushing = true;
    queueMicrotask(() => void this.#flush());
  }

  async #flush(): Promise<void> {
    try {
      while (this.#out.length > 0) {
        const all = new Uint8Array(this.#outBytes);
        let at = 0;
        for (const b of this.#out) {
          all.set(b, at);
          at += b.byteLength;
        }
        this.#out = [];
        this.#outBytes = 0;
        for (let off = 0; off < all.byteLength;) off += await this.#conn.write(all.subarray(off));
      }
    } catch {
      // The connection is gone; the reader ends too.
    } finally {
      this.#flushing = false;
    }
  }

  async #read(): Promise<void> {
    let buf = new Uint8Array(0);
    const chunk = new Uint8Array(64 * 1024);
    for (;;) {
      const n = await this.#conn.read(chunk);
      if (n === null) return;
      const joined = new Uint8Array(buf.byteLength + n);
      joined.set(buf);
      joined.set(chunk.subarray(0, n), buf.byteLength);
      buf = joined;
      let at = 0;
      for (;;) {
        const eol = indexOfCrlf(buf, at);
        if (eol < 0) break;
        const line = decoder.decode(buf.subarray(at, eol));
        if (line.startsWith("MSG ")) {
          const f = line.split(" ");
          const size = Number(f[f.length - 1]);
          if (buf.byteLength < eol + 2 + size + 2) break; // the payload is not all here yet
          const payload = buf.slice(eol + 2, eol + 2 + size);
          at = eol + 2 + size + 2;
          const sid = Number(f[2]);
          this.#handlers.get(sid)?.({
            subject: f[1]!,
            sid,
            reply: f.length === 5 ? f[3] : undefined,
            payload,
          });
          continue;
        }
        at = eol + 2;
        if (line === "PING") this.#write(`PONG${CRLF}`);
        else if (line === "PONG") this.#pongs.shift()?.();
        else if (line.startsWith("-ERR")) throw new Error(`nats-server: ${line}`);
      }
      buf = buf.slice(at);
    }
  }
}

function indexOfCrlf(buf: Uint8Array, from: number): number {
  for (let i = from; i + 1 < buf.byteLength; i++) {
    if (buf[i] === 13 && buf[i + 1] === 10) return i;
  }
  return -1;
}

/** The pid of the local nats-server, or undefined when none runs (read from /proc). */
export function natsServerPid(): number | undefined {
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      if (Deno.readTextFileSync(`/proc/${e.name}/comm`).trim() === "nats-server") {
        return Number(e.name);
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return undefined;
}
