// What the abandoned-record tests share: one track, a publisher of it over WebSocket (where a
// session's end resets its streams; Deno's QUIC cannot reset one), and a bounded wait for a group.
import assert from "node:assert/strict";
import type { MoqSession, ReceivedGroup, TrackProducer } from "../../../src/moq/mod.ts";
import { dialOurs } from "../../support/moq.ts";
import { within } from "../../support/wait.ts";

export const PATH = "room/1";
export const TRACK = "chat";
export const WS = { webSocket: ["qmux-02" as const] };

/** The next group of a subscription, within 20 s; the subscription must not end. */
export async function next(it: AsyncIterator<ReceivedGroup>, what: string): Promise<ReceivedGroup> {
  const r = await within(it.next(), 20_000, what);
  assert.ok(!r.done, "the subscription ended");
  return r.value;
}

/** A session over WebSocket that serves `producer` as PATH / TRACK. */
export function publisher(port: number, producer: TrackProducer): Promise<MoqSession> {
  return dialOurs(port, {
    ...WS,
    moq: { serve: (r) => (r.path === PATH && r.track === TRACK ? producer : "not_found") },
  });
}
