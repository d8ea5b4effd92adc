// How a bench receiver dials its sender, and takes the group streams of a session
// for itself: group streams go to a handler of its own (raw, moq-lite and IETF alike),
// every other uni stream (the moq SETUP stream) to the moq session.
import type { RecvStream, Session } from "../../src/transport/mod.ts";
import { connectQuicSession, connectWebTransport } from "../../src/transport/mod.ts";

/** The transports bench subscribers dial. */
export type Transport = "quic" | "webtransport";

/** Dials `localhost:port` over `transport`, trusting the certificate of SHA-256 `hash` (base64). */
export async function dial(
  transport: Transport,
  port: number,
  hash: string,
  protocol: string,
): Promise<Session> {
  const bytes = Uint8Array.from(atob(hash), (c) => c.charCodeAt(0));
  return transport === "quic"
    ? await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
      serverCertificateHashes: [{ algorithm: "sha-256", value: bytes }],
      alpn: [protocol],
    })
    : await connectWebTransport(new URL(`https://localhost:${port}/`), {
      serverCertificateHashes: [bytes],
      protocols: [protocol],
    });
}

/**
 * Accepts the session's uni streams and reads their type byte: group streams
 * (type 0, or for IETF `ietfGroups` a subgroup header type, 0x10..0x1d) go to
 * `onGroup` with a BYOB reader past that byte; the session returned hands every
 * other stream to whoever calls its `acceptUni`.
 */
export function interceptGroups(
  session: Session,
  onGroup: (reader: ReadableStreamBYOBReader) => Promise<void>,
  ietfGroups = false,
): Session {
  const others: RecvStream[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  const route = async (s: RecvStream): Promise<void> => {
    const reader = s.readable.getReader({ mode: "byob" });
    const head = await reader.read(new Uint8Array(1)).catch(() => undefined);
    const type = head?.value?.[0];
    if (ietfGroups ? type !== undefined && type >= 0x10 && type <= 0x1d : type === 0) {
      return await onGroup(reader);
    }
    if (type === undefined) return;
    reader.releaseLock();
    others.push(replayed(type, s.readable));
    wake?.();
  };
  (async () => {
    for (;;) {
      const s = await session.acceptUni().catch(() => undefined);
      if (!s) break;
      void route(s);
    }
    ended = true;
    wake?.();
  })();
  return new Proxy(session, {
    get(target, prop) {
      if (prop === "acceptUni") {
        return async () => {
          while (others.length === 0 && !ended) await new Promise<void>((r) => (wake = r));
          return others.shift();
        };
      }
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

// The stream again, its type byte put back in front.
function replayed(type: number, rest: ReadableStream<Uint8Array>): RecvStream {
  return {
    readable: new ReadableStream({
      start(c) {
        c.enqueue(new Uint8Array([type]));
      },
      async pull(c) {
        const r = rest.getReader();
        for (;;) {
          const { value, done } = await r.read();
          if (done) break;
          c.enqueue(value);
        }
        c.close();
      },
    }),
  };
}
