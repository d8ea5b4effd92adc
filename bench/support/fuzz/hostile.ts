// One hostile session: dials the target over native QUIC, WebTransport or QMux
// over WebSocket (or sends raw HTTP/3, or hand-made WebSocket frames:
// hostile_ws.ts) and does one thing a broken or malicious peer would: random,
// truncated or mutated moq-lite streams, half-open streams, floods of
// streams, oversized frame declarations, and abrupt closes.
import { codec } from "../../../src/moq/mod.ts";
import type { Session } from "../../../src/transport/mod.ts";
import { quicSession } from "../../../src/transport/mod.ts";
import { connectQMux } from "../../../src/transport/mod.ts";
import { connectWebTransport } from "../../../src/transport/mod.ts";
import { concatBytes, Encoder, encodeVarint } from "../../../src/wire/mod.ts";
import { hostileWebSocket } from "./hostile_ws.ts";
import type { Target } from "./target.ts";
import { sleep } from "../../../src/timers/mod.ts";

/** A seeded source of randomness (numbers in [0, 1)). */
export type Rng = () => number;

/** What the hostile sessions did, by kind. */
export interface HostileTally {
  /** Sessions dialed (attempted). */
  sessions: number;
  /** Sessions whose dial failed (refusals included). */
  dialFailures: number;
  /** Hostile streams or messages sent. */
  inputs: number;
  /** Sessions per action. */
  readonly actions: Record<string, number>;
  /** Sessions per transport. */
  readonly transports: Record<string, number>;
  /** Notable answers of the target, by kind (e.g. whether it let a silent WebSocket peer go). */
  readonly outcomes: Record<string, number>;
}

/** A new, empty tally. */
export function newTally(): HostileTally {
  return { sessions: 0, dialFailures: 0, inputs: 0, actions: {}, transports: {}, outcomes: {} };
}

const int = (rng: Rng, n: number) => Math.floor(rng() * n);
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[int(rng, xs.length)]!;

function randomBytes(rng: Rng, max: number): Uint8Array {
  const out = new Uint8Array(int(rng, max) + 1);
  for (let i = 0; i < out.length; i++) out[i] = int(rng, 256);
  return out;
}

/** Flips, inserts, deletes or truncates a few bytes of `bytes`. */
export function mutate(rng: Rng, bytes: Uint8Array): Uint8Array {
  const out = Array.from(bytes);
  for (let n = int(rng, 4) + 1; n > 0; n--) {
    const at = out.length === 0 ? 0 : int(rng, out.length);
    switch (int(rng, 4)) {
      case 0:
        if (out.length) out[at] = out[at]! ^ (int(rng, 255) + 1);
        break;
      case 1:
        out.splice(at, 0, int(rng, 256));
        break;
      case 2:
        out.splice(at, 1);
        break;
      default:
        out.length = at;
    }
  }
  return Uint8Array.from(out);
}

function name(rng: Rng): string {
  return pick(rng, ["fuzz/a", "fuzz/b/c", "healthy/feed", "", "/", "x".repeat(int(rng, 300))]);
}

/** A well-formed request stream (type + message) a mutation starts from. */
function validRequest(rng: Rng, version: codec.Version): Uint8Array {
  const path = name(rng);
  const track = pick(rng, ["data", "t", ""]);
  const u8 = (n: number) => encodeVarint(n);
  switch (int(rng, 6)) {
    case 0:
      return concatBytes([
        u8(codec.BidiType.Announce),
        codec.encodeAnnounceRequest({ prefix: path, excludeHop: 0n }),
      ]);
    case 1:
      return concatBytes([
        u8(codec.BidiType.Subscribe),
        codec.encodeSubscribe({
          id: BigInt(int(rng, 100)),
          path,
          track,
          priority: int(rng, 256),
          ordered: rng() < 0.5,
          maxLatency: int(rng, 10_000),
          start: rng() < 0.5 ? undefined : int(rng, 1e6),
          end: rng() < 0.5 ? undefined : int(rng, 1e6),
        }),
      ]);
    case 2:
      return concatBytes([
        u8(codec.BidiType.Fetch),
        codec.encodeFetch({ path, track, priority: 1, group: int(rng, 1e6) }),
      ]);
    case 3:
      return concatBytes([
        u8(codec.BidiType.Probe),
        codec.encodeProbe({ bitrate: int(rng, 1e9), rtt: int(rng, 1e4) }),
      ]);
    case 4:
      return version === "moq-lite-05"
        ? concatBytes([u8(codec.BidiType.Track), codec.encodeTrackRequest({ path, track })])
        : concatBytes([u8(codec.BidiType.Goaway), codec.encodeGoaway({ uri: "" })]);
    default:
      return concatBytes([
        u8(codec.BidiType.Subscribe),
        codec.encodeSubscribeUpdate({
          priority: 0,
          ordered: true,
          maxLatency: 0,
          start: undefined,
          end: undefined,
        }),
      ]);
  }
}

async function write(
  stream: { writable: WritableStream<Uint8Array> },
  bytes: Uint8Array,
  fin: boolean,
): Promise<void> {
  const w = stream.writable.getWriter();
  try {
    await w.write(bytes);
    if (fin) await w.close();
  } finally {
    w.releaseLock();
  }
}

/** Reads whatever the server answers on `readable` for up to `ms`, then cancels it. */
async function drain(readable: ReadableStream<Uint8Array>, ms: number): Promise<void> {
  const reader = readable.getReader();
  const timer = setTimeout(() => reader.cancel().catch(() => {}), ms);
  try {
    while (!(await reader.read()).done) { /* discard */ }
  } catch {
    // reset by the server: the expected answer to garbage
  } finally {
    clearTimeout(timer);
  }
}

type Action = (s: Session, rng: Rng, version: codec.Version, tally: HostileTally) => Promise<void>;

const ACTIONS: Record<string, Action> = {
  // Random bytes on a bidi stream, with or without FIN.
  "garbage-bidi": async (s, rng, _v, t) => {
    const st = await s.openBidi();
    await write(st, randomBytes(rng, 300), rng() < 0.7);
    t.inputs++;
    await drain(st.readable, 300);
  },
  // Random bytes on a uni stream (group or setup streams that make no sense).
  "garbage-uni": async (s, rng, _v, t) => {
    await write(await s.openUni(), randomBytes(rng, 300), rng() < 0.7);
    t.inputs++;
  },
  // A valid request with a few bytes flipped, inserted, deleted or cut off.
  "mutated-request": async (s, rng, v, t) => {
    for (let i = int(rng, 5) + 1; i > 0; i--) {
      const st = await s.openBidi();
      await write(st, mutate(rng, validRequest(rng, v)), true);
      t.inputs++;
      void drain(st.readable, 300);
    }
    await sleep(100);
  },
  // A valid request cut short, then FIN.
  truncated: async (s, rng, v, t) => {
    const whole = validRequest(rng, v);
    const st = await s.openBidi();
    await write(st, whole.subarray(0, int(rng, whole.length)), true);
    t.inputs++;
    await drain(st.readable, 300);
  },
  // Half a request, never finished; the session is then dropped abruptly.
  "half-open": async (s, rng, v, t) => {
    for (let i = int(rng, 8) + 1; i > 0; i--) {
      const whole = validRequest(rng, v);
      await write(await s.openBidi(), whole.subarray(0, int(rng, whole.length) + 1), false);
      t.inputs++;
    }
    await sleep(int(rng, 1500));
  },
  // A group stream declaring a 16 MiB frame, a few bytes of it, then silence.
  "huge-frame": async (s, rng, _v, t) => {
    const header = codec.encodeGroupStreamHeader({ subscribeId: BigInt(int(rng, 4)), sequence: 1 });
    const frame = new Encoder().varint(16 << 20).bytes(randomBytes(rng, 64)).finish();
    await write(await s.openUni(), concatBytes([header, frame]), false);
    t.inputs++;
    await sleep(int(rng, 1500));
  },
  // A lite-05 SETUP stream of garbage (or a second SETUP).
  "bad-setup": async (s, rng, v, t) => {
    const setup = codec.encodeSetup({ probe: 1, origin: 7n });
    const body = rng() < 0.5 ? mutate(rng, setup) : setup;
    await write(await s.openUni(), concatBytes([encodeVarint(codec.UniType.Setup), body]), true);
    t.inputs++;
    if (v === "moq-lite-05") await sleep(100);
  },
  // Many streams at once with random types.
  "stream-flood": async (s, rng, _v, t) => {
    const opened: Promise<void>[] = [];
    for (let i = 0; i < 40; i++) {
      opened.push(
        (async () => {
          const st = await s.openBidi();
          await write(st, Uint8Array.of(int(rng, 64), int(rng, 64)), rng() < 0.5);
          t.inputs++;
        })().catch(() => {}),
      );
    }
    await Promise.all(opened);
    await sleep(200);
  },
  // Well-formed subscriptions to tracks that do not exist (or are not ours).
  "unknown-subscribe": async (s, rng, v, t) => {
    for (let i = int(rng, 10) + 1; i > 0; i--) {
      const st = await s.openBidi();
      await write(
        st,
        concatBytes([
          encodeVarint(codec.BidiType.Subscribe),
          codec.encodeSubscribe({
            id: BigInt(i),
            path: pick(rng, ["fuzz/none", "healthy/feed", "nope"]),
            track: pick(rng, ["data", "other"]),
            priority: 0,
            ordered: true,
            maxLatency: 0,
            start: undefined,
            end: undefined,
          }),
        ]),
        rng() < 0.5,
      );
      t.inputs++;
      void drain(st.readable, 500);
    }
    void v;
    await sleep(200);
  },
  // Closes at once, with a random code, before doing anything.
  abrupt: async (s, rng) => {
    s.close(int(rng, 1 << 16), "");
    await Promise.resolve();
  },
};

/** The actions' names. */
export const ACTION_NAMES: readonly string[] = Object.keys(ACTIONS);

/** The ways a hostile session reaches the target. */
export const TRANSPORTS = ["quic", "webtransport", "websocket", "websocket-frames", "h3"] as const;

/** One way of reaching the target: `websocket` runs moq-lite abuses in a real QMux session, `websocket-frames` abuses QMux and WebSocket framing by hand, `h3` sends raw HTTP/3 garbage. */
export type Transport = typeof TRANSPORTS[number];

/** Dials the target one way: native QUIC with a moq-lite ALPN, WebTransport, or QMux over WebSocket. */
async function dial(
  target: Target,
  transport: "quic" | "webtransport" | "websocket",
  version: codec.Version,
  jwt: string | undefined,
): Promise<Session> {
  const query = jwt ? `?jwt=${jwt}` : "";
  if (transport === "webtransport") {
    return await connectWebTransport(new URL(`https://localhost:${target.moqPort}/${query}`), {
      protocols: [version],
      serverCertificateHashes: [target.certSha256],
      timeoutMs: 5000,
    });
  }
  if (transport === "websocket") {
    return await connectQMux(new URL(`wss://127.0.0.1:${target.moqPort}/${query}`), {
      protocols: [version],
      caCerts: [target.certPem],
      serverName: "localhost",
      timeoutMs: 5000,
    });
  }
  const conn = await Deno.connectQuic({
    hostname: "127.0.0.1",
    port: target.moqPort,
    alpnProtocols: [version],
    serverName: "localhost",
    serverCertificateHashes: [{ algorithm: "sha-256", value: target.certSha256 }],
    maxIdleTimeout: 5000,
  } as Deno.ConnectQuicOptions<false>);
  const session = quicSession(conn, {
    url: new URL(`moqt://localhost:${target.moqPort}/${query}`),
  });
  if (version === "moq-lite-05") {
    // The Path parameter carries the credential on native QUIC.
    await write(
      await session.openUni(),
      concatBytes([
        encodeVarint(codec.UniType.Setup),
        codec.encodeSetup({ path: `/${query}` }),
      ]),
      true,
    );
  }
  return session;
}

/** Raw HTTP/3 garbage: a QUIC connection with ALPN h3 whose streams carry random bytes. */
async function rawH3(target: Target, rng: Rng, tally: HostileTally): Promise<void> {
  const conn = await Deno.connectQuic({
    hostname: "127.0.0.1",
    port: target.moqPort,
    alpnProtocols: ["h3"],
    serverName: "localhost",
    serverCertificateHashes: [{ algorithm: "sha-256", value: target.certSha256 }],
    maxIdleTimeout: 5000,
  } as Deno.ConnectQuicOptions<false>);
  try {
    const uni = await conn.createUnidirectionalStream();
    // A control stream type then garbage, or a random stream type.
    await write(
      { writable: uni },
      concatBytes([Uint8Array.of(rng() < 0.5 ? 0 : int(rng, 64)), randomBytes(rng, 100)]),
      rng() < 0.5,
    );
    const bidi = await conn.createBidirectionalStream();
    await write(bidi, randomBytes(rng, 200), true);
    tally.inputs += 2;
    await drain(bidi.readable, 300);
  } finally {
    conn.close({ closeCode: 0, reason: "" });
  }
}

/**
 * Runs one hostile session against `target`: picks a transport (among
 * `transports`, default all), version, credential (none, forged or a real
 * one for `fuzz/**`) and action.
 */
export async function hostileSession(
  target: Target,
  rng: Rng,
  tally: HostileTally,
  transports: readonly Transport[] = TRANSPORTS,
): Promise<void> {
  tally.sessions++;
  // Raw HTTP/3 is a small share, as before WebSocket existed.
  const others = transports.filter((t) => t !== "h3");
  const transport: Transport = transports.includes("h3") && (others.length === 0 || rng() < 0.08)
    ? "h3"
    : pick(rng, others);
  tally.transports[transport] = (tally.transports[transport] ?? 0) + 1;
  if (transport === "h3") {
    tally.actions["raw-h3"] = (tally.actions["raw-h3"] ?? 0) + 1;
    try {
      await rawH3(target, rng, tally);
    } catch {
      tally.dialFailures++;
    }
    return;
  }
  const version = pick(rng, codec.VERSIONS);
  const roll = rng();
  const jwt = roll < 0.6
    ? target.jwt.hostile
    : roll < 0.8
    ? undefined
    : mutate(rng, new TextEncoder().encode(target.jwt.hostile)).reduce(
      (s, b) => s + String.fromCharCode(0x41 + (b % 26)),
      "",
    );
  if (transport === "websocket-frames") {
    await hostileWebSocket(target, rng, tally, jwt, mutate);
    return;
  }
  const action = pick(rng, ACTION_NAMES);
  tally.actions[action] = (tally.actions[action] ?? 0) + 1;
  let session: Session;
  try {
    session = await dial(target, transport, version, jwt);
  } catch {
    tally.dialFailures++;
    return;
  }
  try {
    await ACTIONS[action]!(session, rng, version, tally);
  } catch {
    // The server reset a stream or closed the session: what it should do to garbage.
  } finally {
    session.close(int(rng, 2) ? 0 : int(rng, 1 << 16), "");
  }
}
