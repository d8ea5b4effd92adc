// Child role "raw-sender": the ceiling. A bare Deno QUIC sender writes the same
// track to each connection: one uni stream per group, each frame written to it as it
// is made, in the bytes of a moq-lite-05 group stream.
import { fps, frameSize, gop, PROTOCOL, values } from "./options.ts";
import { stampedFrame } from "./frames.ts";
import { pace } from "../fanout/pace.ts";
import { codec, encodeGroupStreamHeader } from "../../src/moq/mod.ts";
import { listen, type Session } from "../../src/transport/mod.ts";

/** One connection being fed. */
interface Feed {
  readonly session: Session;
  writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  tail: Promise<void>;
  /** Frames written but not yet taken by the stream. */
  pending: number;
  /** Behind by more than half a group at a group's start: that group is skipped, as a relay does. */
  skipping: boolean;
  closed: boolean;
}

/** Child: accepts connections, and on each one's start byte feeds it the track live. */
export async function rawSenderRole(): Promise<void> {
  const feeds = new Set<Feed>();
  const server = await listen({
    protocols: [PROTOCOL],
    certPem: await Deno.readTextFile(`${values.dir}/cert.pem`),
    keyPem: await Deno.readTextFile(`${values.dir}/key.pem`),
    onSession: (session) => void started(session, feeds),
  });
  let index = 0;
  pace(fps, 1, () => {
    const k = index++;
    const bytes = codec.encodeFrames([stampedFrame(frameSize)], PROTOCOL);
    for (const feed of feeds) write(feed, k, bytes);
  });
  console.log(JSON.stringify({ port: server.addr.port }));
  await new Promise(() => {});
}

// Waits for the connection's start byte, then adds it to the fed ones.
async function started(session: Session, feeds: Set<Feed>): Promise<void> {
  const start = await session.acceptBidi();
  if (!start) return;
  await start.readable.getReader().read();
  const feed: Feed = {
    session,
    writer: undefined,
    tail: Promise.resolve(),
    pending: 0,
    skipping: true,
    closed: false,
  };
  session.closed.then(() => (feed.closed = true), () => (feed.closed = true));
  feeds.add(feed);
}

// Frame `k` to one connection: a new group stream every `gop` frames, then the frame.
function write(feed: Feed, k: number, bytes: Uint8Array): void {
  if (feed.closed) return;
  if (k % gop === 0) {
    feed.skipping = feed.pending > gop / 2;
    if (!feed.skipping) openGroup(feed, k / gop);
  }
  if (feed.skipping) return;
  feed.pending++;
  feed.tail = feed.tail
    .then(() => feed.writer?.write(bytes))
    .catch(() => void (feed.closed = true))
    .finally(() => void feed.pending--);
}

// Finishes the group before and opens group `sequence`'s stream, in turn with the writes.
function openGroup(feed: Feed, sequence: number): void {
  feed.tail = feed.tail.then(async () => {
    void feed.writer?.close().catch(() => {});
    const stream = await feed.session.openUni();
    feed.writer = stream.writable.getWriter();
    await feed.writer.write(encodeGroupStreamHeader({ subscribeId: 0n, sequence }));
  }).catch(() => void (feed.closed = true));
}
