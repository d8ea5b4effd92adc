/**
 * The critical streams of one HTTP/3 connection: our control stream with
 * SETTINGS, and the peer's control, QPACK encoder and QPACK decoder streams
 * (RFC 9114 §6.2.1, RFC 9204 §4.2). Each may exist once; closing or
 * resetting one while the connection lives is a connection error
 * (H3ConnectionError, which the connection turns into CONNECTION_CLOSE).
 */
import { H3Code, H3ConnectionError } from "./errors.ts";
import { encodeFrame, FrameType, HTTP2_RESERVED_FRAME_TYPES, UniStreamType } from "./frame.ts";
import { decodeSettings, localSettings, type Settings } from "./settings.ts";
import { concatBytes, DecodeError, encodeVarint, type StreamReader } from "../../wire/mod.ts";

const MAX_CONTROL_FRAME = 16 * 1024;

/** What the critical streams need to know about their connection. */
export interface ControlStreamsHost {
  /** True once the connection is closing or closed: a critical stream ending then is expected. */
  readonly isClosed: boolean;
}

/** Our control stream and the peer's critical streams. */
export class ControlStreams {
  /** Resolves with the peer's SETTINGS; rejects if the connection ends first. */
  readonly peerSettings: Promise<Settings>;

  readonly #role: "server" | "client";
  readonly #host: ControlStreamsHost;
  #resolveSettings!: (s: Settings) => void;
  #rejectSettings!: (e: Error) => void;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #seen = new Set<number>();

  /** Creates the streams' state for one connection; `open()` sends our SETTINGS. */
  constructor(role: "server" | "client", host: ControlStreamsHost) {
    this.#role = role;
    this.#host = host;
    this.peerSettings = new Promise((resolve, reject) => {
      this.#resolveSettings = resolve;
      this.#rejectSettings = reject;
    });
    // Waiters see the rejection; this only keeps it from going unhandled when nobody waits.
    this.peerSettings.catch(() => {});
  }

  /** Opens our control stream and sends SETTINGS. */
  async open(conn: Deno.QuicConn, maxFieldSectionSize: number): Promise<void> {
    const s = await conn.createUnidirectionalStream({ sendOrder: 1 << 30 });
    const w = s.getWriter();
    this.#writer = w;
    const settings = localSettings(this.#role, maxFieldSectionSize);
    await w.write(
      concatBytes([encodeVarint(UniStreamType.CONTROL), encodeFrame(FrameType.SETTINGS, settings)]),
    );
    // Never closed: closing a control stream is a connection error for the peer.
  }

  /** Writes a frame on our control stream (e.g. GOAWAY). */
  async write(type: number, payload: Uint8Array): Promise<void> {
    await this.#writer?.write(encodeFrame(type, payload));
  }

  /** The connection closed: SETTINGS will never come. */
  connectionClosed(): void {
    this.#rejectSettings(new Error("Connection closed before SETTINGS"));
  }

  /** Reads the peer's control stream (after its type) until it ends: SETTINGS first, then frames to skip. */
  async readControl(r: StreamReader): Promise<void> {
    this.#claim(UniStreamType.CONTROL, "control");
    let first = true;
    try {
      for (;;) {
        const type = await r.varint("a control frame");
        if (type === undefined) {
          throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "Control stream closed");
        }
        const length = await r.varint("a control frame");
        if (length === undefined) {
          throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "Control stream closed");
        }
        if (first) {
          first = false;
          if (type !== FrameType.SETTINGS) {
            throw new H3ConnectionError(
              H3Code.MISSING_SETTINGS,
              "First control frame is not SETTINGS",
            );
          }
          if (length > MAX_CONTROL_FRAME) {
            throw new H3ConnectionError(H3Code.EXCESSIVE_LOAD, `SETTINGS frame of ${length} bytes`);
          }
          this.#resolveSettings(decodeSettings(await r.bytes(length, "SETTINGS")));
          continue;
        }
        if (
          type === FrameType.SETTINGS || type === FrameType.DATA || type === FrameType.HEADERS ||
          type === FrameType.PUSH_PROMISE || HTTP2_RESERVED_FRAME_TYPES.has(type) ||
          (type === FrameType.MAX_PUSH_ID && this.#role === "client")
        ) {
          throw new H3ConnectionError(
            H3Code.FRAME_UNEXPECTED,
            `Frame 0x${type.toString(16)} on the control stream`,
          );
        }
        if (length > MAX_CONTROL_FRAME) {
          await r.skip(length, "a control frame");
        } else {
          await r.bytes(length, "a control frame"); // GOAWAY, CANCEL_PUSH, MAX_PUSH_ID, unknown: nothing to act on
        }
      }
    } catch (err) {
      if (err instanceof H3ConnectionError) throw err;
      if (err instanceof DecodeError && err.code === "truncated") {
        throw new H3ConnectionError(
          H3Code.CLOSED_CRITICAL_STREAM,
          "Control stream closed mid-frame",
        );
      }
      if (this.#host.isClosed) return;
      throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "Control stream reset");
    }
  }

  /** Reads the peer's QPACK encoder stream: only a zero table capacity is acceptable. */
  async readQpackEncoder(r: StreamReader): Promise<void> {
    this.#claim(UniStreamType.QPACK_ENCODER, "QPACK encoder");
    try {
      for (;;) {
        const b = await r.u8();
        if (b === undefined) {
          throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "QPACK encoder stream closed");
        }
        // Only "Set Dynamic Table Capacity 0" is acceptable: we advertised capacity 0.
        if ((b & 0xe0) !== 0x20 || (b & 0x1f) !== 0) {
          throw new H3ConnectionError(
            H3Code.QPACK_ENCODER_STREAM_ERROR,
            `QPACK encoder instruction 0x${b.toString(16)} with a zero-capacity table`,
          );
        }
      }
    } catch (err) {
      if (err instanceof H3ConnectionError) throw err;
      if (this.#host.isClosed) return;
      throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "QPACK encoder stream reset");
    }
  }

  /** Reads the peer's QPACK decoder stream: nothing on it matters without a dynamic table. */
  async readQpackDecoder(r: StreamReader): Promise<void> {
    this.#claim(UniStreamType.QPACK_DECODER, "QPACK decoder");
    try {
      while ((await r.chunk(4096)) !== undefined) {
        /* nothing to act on without a dynamic table */
      }
    } catch {
      // A reset after the connection closed is expected; otherwise reported below.
      if (this.#host.isClosed) return;
    }
    if (!this.#host.isClosed) {
      throw new H3ConnectionError(H3Code.CLOSED_CRITICAL_STREAM, "QPACK decoder stream closed");
    }
  }

  #claim(type: number, name: string): void {
    if (this.#seen.has(type)) {
      throw new H3ConnectionError(H3Code.STREAM_CREATION_ERROR, `Second ${name} stream`);
    }
    this.#seen.add(type);
  }
}
