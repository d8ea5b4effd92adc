// Hostile WebSocket peers below the QMux session: each dials the target's TCP
// port, completes (or botches) the handshake with sluice's own client, and
// then frames by hand with ws_frame.ts and the QMux frame encoders: bad
// subprotocol offers, text messages, random, truncated and mutated records
// and WebSocket frames, frames for streams that do not exist, flow-control
// and stream-limit violations, oversized records, abrupt TCP closes, and a
// peer that never answers the server's close.
import { codec } from "../../../src/moq/mod.ts";
import { encodeFrame, streamFrameHeader } from "../../../src/transport/mod.ts";
import { decodeMessage } from "../../../src/transport/mod.ts";
import { VERSIONS } from "../../../src/moq/mod.ts";
import { DEFAULT_PARAMS, parseSubprotocol, subprotocolOffer } from "../../../src/transport/mod.ts";
import { encodeTransportParams } from "../../../src/transport/mod.ts";
import { streamId } from "../../../src/transport/mod.ts";
import { usesRecords, type WireFormat } from "../../../src/transport/mod.ts";
import { openRawWebSocket, type RawWebSocket } from "../../../src/transport/mod.ts";
import {
  closePayload,
  encodeClientFrame,
  Opcode,
  parseServerFrame,
} from "../../../src/transport/mod.ts";
import { concatBytes, encodeVarint } from "../../../src/wire/mod.ts";
import type { HostileTally, Rng } from "./hostile.ts";
import type { Target } from "./target.ts";

/** Every subprotocol the servers accept, in our client's order, then the legacy form. */
const VERSIONS_OFFER: readonly string[] = [
  ...subprotocolOffer(VERSIONS),
  ...VERSIONS.map((v) => `webtransport.${v}`),
];

const int = (rng: Rng, n: number) => Math.floor(rng() * n);
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[int(rng, xs.length)]!;

/** An open hostile WebSocket: hand-made frames out, the server's frames read (or not). */
interface RawPeer {
  readonly format: WireFormat;
  /** Codes of the CONNECTION_CLOSE frames the server sent (what it made of our abuse). */
  readonly closes: number[];
  /** Answers of the server that break WebSocket or QMux, by kind (there should be none). */
  readonly unexpected: Record<string, number>;
  /** One binary message. */
  send(message: Uint8Array): Promise<void>;
  /** Bytes as they are (frames already encoded, or not frames at all). */
  write(bytes: Uint8Array): Promise<void>;
  /** Reads the server's frames for up to `ms`, answering its close (unless `silent`); true when the server ended the connection. */
  read(ms: number, silent?: boolean): Promise<boolean>;
  /** Closes the TCP connection at once (no close frame). */
  drop(): void;
}

async function dialRaw(
  target: Target,
  protocols: readonly string[],
  jwt: string | undefined,
): Promise<RawPeer> {
  const url = new URL(`wss://127.0.0.1:${target.moqPort}/${jwt ? `?jwt=${jwt}` : ""}`);
  const opening = openRawWebSocket(url, {
    protocols,
    caCerts: [target.certPem],
    serverName: "localhost",
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const raw = await Promise.race([
    opening,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("No handshake answer within 5 s")), 5000);
    }),
  ]).finally(() => clearTimeout(timer));
  return peer(raw);
}

function peer(raw: RawWebSocket): RawPeer {
  let pending = raw.rest;
  let ended = false;
  const closes: number[] = [];
  const format = parseSubprotocol(raw.protocol).format;
  const chunk = new Uint8Array(64 * 1024);
  // One read at a time: a read that outlived its caller's wait is picked up by the next.
  let inflight: Promise<number | null> | undefined;
  const write = async (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.length;) at += await raw.conn.write(bytes.subarray(at));
  };
  const note = (what: string) => (unexpected[what] = (unexpected[what] ?? 0) + 1);
  const unexpected: Record<string, number> = {};
  return {
    format,
    closes,
    unexpected,
    send: (message) => write(encodeClientFrame(Opcode.BINARY, message)),
    write,
    async read(ms, silent = false) {
      const deadline = performance.now() + ms;
      while (!ended && performance.now() < deadline) {
        let parsed;
        try {
          parsed = parseServerFrame(pending, 128 << 20);
        } catch {
          note("server sent a WebSocket frame that does not parse");
          return false;
        }
        if (parsed) {
          pending = pending.subarray(parsed.size);
          const { opcode, payload } = parsed.frame;
          if (opcode === Opcode.BINARY) {
            try {
              for (const f of decodeMessage(payload, format)) {
                if (f.type === "connection_close") closes.push(f.code);
              }
            } catch {
              note("server sent a QMux record that does not parse");
            }
          } else if (opcode === Opcode.CLOSE && !silent) {
            await write(encodeClientFrame(Opcode.CLOSE, payload.slice(0, 2))).catch(() => {});
          }
          continue;
        }
        let timer: ReturnType<typeof setTimeout> | undefined;
        inflight ??= raw.conn.read(chunk).catch(() => null);
        const n = await Promise.race([
          inflight,
          new Promise<"late">((r) => {
            timer = setTimeout(() => r("late"), deadline - performance.now());
          }),
        ]);
        clearTimeout(timer);
        if (n === "late") return false;
        inflight = undefined;
        if (n === null) ended = true;
        else pending = concatBytes([pending, chunk.subarray(0, n)]);
      }
      return ended;
    },
    drop() {
      ended = true;
      try {
        raw.conn.close();
      } catch {
        // already closed
      }
    },
  };
}

/** Our transport parameters in the peer's format (none for the legacy form). */
function params(format: WireFormat): Uint8Array {
  if (format === "webtransport") return new Uint8Array(0);
  return encodeFrame(format, {
    type: "transport_parameters",
    payload: encodeTransportParams(DEFAULT_PARAMS, format),
  });
}

/** One STREAM frame (header and data) in the peer's format. */
function streamFrame(
  format: WireFormat,
  id: number,
  offset: number,
  data: Uint8Array,
  fin: boolean,
): Uint8Array {
  return concatBytes([streamFrameHeader(format, id, offset, data.length, fin), data]);
}

/** Frames as messages: one record of them where the format allows, else one message each. */
async function sendFrames(p: RawPeer, frames: readonly Uint8Array[]): Promise<void> {
  if (usesRecords(p.format)) {
    // Records stay under the 64 KiB the server grants.
    let batch: Uint8Array[] = [];
    let size = 0;
    for (const f of frames) {
      if (size + f.length > 60_000 && batch.length > 0) {
        await p.send(concatBytes(batch));
        batch = [];
        size = 0;
      }
      batch.push(f);
      size += f.length;
    }
    if (batch.length > 0) await p.send(concatBytes(batch));
  } else {
    for (const f of frames) await p.send(f);
  }
}

function randomBytes(rng: Rng, max: number): Uint8Array {
  const out = new Uint8Array(int(rng, max) + 1);
  for (let i = 0; i < out.length; i++) out[i] = int(rng, 256);
  return out;
}

/** A well-formed moq-lite request stream's bytes. */
function moqRequest(rng: Rng): Uint8Array {
  return rng() < 0.5
    ? concatBytes([
      encodeVarint(codec.BidiType.Announce),
      codec.encodeAnnounceRequest({ prefix: pick(rng, ["fuzz", "healthy", ""]), excludeHop: 0n }),
    ])
    : concatBytes([
      encodeVarint(codec.BidiType.Subscribe),
      codec.encodeSubscribe({
        id: BigInt(int(rng, 100)),
        path: pick(rng, ["fuzz/a", "healthy/feed", "nope"]),
        track: pick(rng, ["data", "x"]),
        priority: int(rng, 256),
        ordered: rng() < 0.5,
        maxLatency: int(rng, 10_000),
        start: undefined,
        end: undefined,
      }),
    ]);
}

type RawAction = (
  p: RawPeer,
  rng: Rng,
  t: HostileTally,
  mutate: (rng: Rng, b: Uint8Array) => Uint8Array,
) => Promise<void>;

const RAW_ACTIONS: Record<string, RawAction> = {
  // A text message, which QMux forbids (1003).
  "ws-text": async (p, rng, t) => {
    if (p.format !== "webtransport") await p.send(params(p.format));
    await p.write(
      encodeClientFrame(Opcode.TEXT, new TextEncoder().encode("x".repeat(int(rng, 200)))),
    );
    t.inputs++;
    await p.read(1500);
  },
  // Random bytes as records, with or without our parameters first.
  "ws-garbage-records": async (p, rng, t) => {
    if (rng() < 0.5 && p.format !== "webtransport") await p.send(params(p.format));
    for (let i = int(rng, 4) + 1; i > 0; i--) {
      await p.send(randomBytes(rng, 400));
      t.inputs++;
    }
    await p.read(1000);
  },
  // Valid records (parameters, then moq requests on streams) with bytes flipped, inserted or cut.
  "ws-mutated-records": async (p, rng, t, mutate) => {
    const frames = [params(p.format)].filter((f) => f.length > 0);
    for (let i = 0; i < int(rng, 4) + 1; i++) {
      frames.push(
        streamFrame(
          p.format,
          streamId(i, { uni: false, server: false }),
          0,
          moqRequest(rng),
          rng() < 0.5,
        ),
      );
    }
    for (const f of frames) {
      await p.send(rng() < 0.5 ? mutate(rng, f) : f);
      t.inputs++;
    }
    await p.read(1000);
  },
  // A record cut short mid-frame.
  "ws-truncated-record": async (p, rng, t) => {
    const whole = concatBytes([
      params(p.format),
      streamFrame(p.format, 0, 0, moqRequest(rng), false),
    ]);
    await p.send(whole.subarray(0, int(rng, whole.length)));
    t.inputs++;
    await p.read(1000);
  },
  // WebSocket frames mutated below QMux: RSV bits, opcodes, lengths, masks.
  "ws-mutated-frame": async (p, rng, t, mutate) => {
    if (p.format !== "webtransport") await p.send(params(p.format));
    const opcode = rng() < 0.5 ? int(rng, 16) : Opcode.BINARY;
    const frame = encodeClientFrame(opcode, randomBytes(rng, 300));
    await p.write(rng() < 0.7 ? mutate(rng, frame) : frame);
    t.inputs++;
    await p.read(1000);
  },
  // STREAM, RESET_STREAM, STOP_SENDING and MAX_STREAM_DATA for streams that never existed
  // (server-initiated ids we were never given).
  "ws-unknown-stream": async (p, rng, t) => {
    const id = streamId(int(rng, 50), { uni: rng() < 0.5, server: true });
    const frame = p.format === "webtransport"
      ? streamFrame(p.format, id, 0, randomBytes(rng, 50), false)
      : pick(rng, [
        streamFrame(p.format, id, 0, randomBytes(rng, 50), false),
        encodeFrame(p.format, { type: "reset_stream", id, code: 1, finalSize: 0 }),
        encodeFrame(p.format, { type: "stop_sending", id, code: 1 }),
        encodeFrame(p.format, { type: "max_stream_data", id, max: 1 << 20 }),
      ]);
    await sendFrames(p, [params(p.format), frame].filter((f) => f.length > 0));
    t.inputs++;
    await p.read(1000);
  },
  // Data out of order past the stream window (256 KiB), or more than the connection window
  // (1 MiB) over a few streams (a violation unless the application frees credit first).
  "ws-credit-violation": async (p, rng, t) => {
    const past = rng() < 0.5;
    const frames = [params(p.format)].filter((f) => f.length > 0);
    if (past) {
      // One frame at an offset beyond the stream's window.
      frames.push(
        streamFrame(p.format, 0, 256 * 1024 + int(rng, 1024), randomBytes(rng, 100), false),
      );
    } else {
      // Many streams, each within its window, together past the connection's.
      const chunk = new Uint8Array(16_000);
      for (let s = 0; s < 6; s++) {
        for (let off = 0; off < 200_000; off += chunk.length) {
          frames.push(
            streamFrame(p.format, streamId(s, { uni: true, server: false }), off, chunk, false),
          );
        }
      }
    }
    await sendFrames(p, frames).catch(() => {});
    t.inputs++;
    await p.read(1000);
  },
  // More streams at once than the server allows (100 bidi, 1000 uni).
  "ws-stream-flood": async (p, rng, t) => {
    const uni = rng() < 0.5;
    const n = uni ? 1100 : 130;
    const frames = [params(p.format)].filter((f) => f.length > 0);
    for (let i = 0; i < n; i++) {
      frames.push(
        streamFrame(
          p.format,
          streamId(i, { uni, server: false }),
          0,
          Uint8Array.of(int(rng, 64)),
          false,
        ),
      );
    }
    await sendFrames(p, frames).catch(() => {});
    t.inputs++;
    await p.read(1000);
  },
  // A record over the 64 KiB the server grants (up to 1 MiB).
  "ws-oversized-record": async (p, rng, t) => {
    if (p.format !== "webtransport") await p.send(params(p.format));
    await p.send(streamFrame(p.format, 0, 0, new Uint8Array(65_537 + int(rng, 1 << 20)), false));
    t.inputs++;
    await p.read(1000);
  },
  // Well-formed QMux streams whose contents are random or mutated moq-lite.
  "ws-moq-garbage": async (p, rng, t, mutate) => {
    const frames = [params(p.format)].filter((f) => f.length > 0);
    for (let i = int(rng, 6) + 1; i > 0; i--) {
      const uni = rng() < 0.3;
      const body = uni
        ? randomBytes(rng, 200)
        : rng() < 0.5
        ? mutate(rng, moqRequest(rng))
        : randomBytes(rng, 200);
      frames.push(streamFrame(p.format, streamId(i, { uni, server: false }), 0, body, rng() < 0.6));
      t.inputs++;
    }
    await sendFrames(p, frames);
    await p.read(1000);
  },
  // Requests half sent on streams never finished, then the TCP connection cut.
  "ws-half-open": async (p, rng, t) => {
    const frames = [params(p.format)].filter((f) => f.length > 0);
    for (let i = int(rng, 8) + 1; i > 0; i--) {
      const whole = moqRequest(rng);
      frames.push(
        streamFrame(
          p.format,
          streamId(i, { uni: false, server: false }),
          0,
          whole.subarray(0, int(rng, whole.length) + 1),
          false,
        ),
      );
      t.inputs++;
    }
    await sendFrames(p, frames);
    await p.read(int(rng, 1500));
    p.drop();
  },
  // Half a WebSocket frame, then the TCP connection cut.
  "ws-abrupt": async (p, rng, t) => {
    const frame = encodeClientFrame(
      Opcode.BINARY,
      concatBytes([params(p.format), randomBytes(rng, 100)]),
    );
    await p.write(frame.subarray(0, int(rng, frame.length)));
    t.inputs++;
    p.drop();
  },
  // Provokes the server's close, reads it, and never answers: the server must let go by itself.
  "ws-silent-close": async (p, _rng, t) => {
    await p.write(encodeClientFrame(Opcode.TEXT, new TextEncoder().encode("close me")));
    t.inputs++;
    const released = await p.read(5000, true);
    const outcome = released ? "silent peer let go" : "silent peer still open after 5 s";
    t.outcomes[outcome] = (t.outcomes[outcome] ?? 0) + 1;
  },
  // A close frame of our own with garbage in it, then more data after it.
  "ws-bad-close": async (p, rng, t) => {
    if (p.format !== "webtransport") await p.send(params(p.format));
    await p.write(
      encodeClientFrame(
        Opcode.CLOSE,
        rng() < 0.5 ? randomBytes(rng, 120) : closePayload(int(rng, 65536), ""),
      ),
    );
    await p.send(randomBytes(rng, 100)).catch(() => {});
    t.inputs++;
    await p.read(1000);
  },
};

/** The raw WebSocket actions' names. */
export const WS_ACTION_NAMES: readonly string[] = [...Object.keys(RAW_ACTIONS), "ws-bad-offer"];

/** Offers the server must refuse: none, bare drafts, unknown versions, junk. */
const BAD_OFFERS: readonly (readonly string[])[] = [
  [],
  ["qmux-02"],
  ["webtransport"],
  ["qmux-02.moq-lite-03"],
  ["qmux-99.moq-lite-05"],
  ["moq-lite-05"],
  ["x".repeat(300)],
];

/**
 * One hostile WebSocket session against `target`: a bad subprotocol offer,
 * or a handshake with a real offer and then one abuse below the session.
 */
export async function hostileWebSocket(
  target: Target,
  rng: Rng,
  tally: HostileTally,
  jwt: string | undefined,
  mutate: (rng: Rng, b: Uint8Array) => Uint8Array,
): Promise<void> {
  const action = pick(rng, WS_ACTION_NAMES);
  tally.actions[action] = (tally.actions[action] ?? 0) + 1;
  if (action === "ws-bad-offer") {
    tally.inputs++;
    const p = await dialRaw(target, pick(rng, BAD_OFFERS), jwt).catch(() => undefined);
    if (p) {
      tally.outcomes["bad offer accepted"] = (tally.outcomes["bad offer accepted"] ?? 0) + 1;
      p.drop();
    } else {
      tally.dialFailures++;
    }
    return;
  }
  let p: RawPeer;
  try {
    p = await dialRaw(target, VERSIONS_OFFER.slice(int(rng, VERSIONS_OFFER.length)), jwt);
  } catch {
    tally.dialFailures++;
    return;
  }
  try {
    await RAW_ACTIONS[action]!(p, rng, tally, mutate);
  } catch {
    // The server closed on us: what it should do to garbage.
  } finally {
    p.drop();
    const outcomes = [
      ...p.closes.map((code) => `CONNECTION_CLOSE 0x${code.toString(16)}`),
      ...Object.keys(p.unexpected),
    ];
    for (const o of outcomes) tally.outcomes[o] = (tally.outcomes[o] ?? 0) + 1;
  }
}
