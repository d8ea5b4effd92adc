/** Sending a served group as a datagram (lite-05, datagram tracks only). */
import { encodeDatagram } from "../codec/mod.ts";
import type { CachedGroup } from "../track/mod.ts";
import { errorText } from "../../error_text/mod.ts";
import type { SessionCore } from "./core.ts";

/**
 * Largest datagram body sent, bytes: the lite-05 draft's cap, which every
 * QUIC path carries (its minimum MTU leaves 1200 bytes of payload).
 */
export const MAX_DATAGRAM_BODY = 1200;

/**
 * How long the newest group sent as a datagram waits for a newer one
 * before it is sent again on a stream, ms. A lost datagram shows as a gap
 * once a newer group arrives; the last of a burst has none after it, so
 * without the repeat its loss would go unnoticed until the track moves on.
 */
export const DATAGRAM_TAIL_MS = 100;

/**
 * Whether a served track's groups may travel as datagrams: lite-05 on a
 * transport that has them, and a track the application chose.
 */
export function datagramsWanted(core: SessionCore, path: string, track: string): boolean {
  // The draft forbids datagrams on QMux over WebSocket; there they would cross TCP anyway.
  return core.version === "moq-lite-05" && core.transport.transport !== "websocket" &&
    core.transport.sendDatagram !== undefined &&
    (core.policy.datagrams?.(path, track, core.session) ?? false);
}

/**
 * Sends a single-frame group as a datagram when it fits; false when it
 * must take a stream (several frames, too large, or datagrams not possible
 * on the session right now).
 */
export async function sendDatagram(
  core: SessionCore,
  id: bigint,
  group: CachedGroup,
): Promise<boolean> {
  const frames = group.frames;
  const limit = Math.min(MAX_DATAGRAM_BODY, core.transport.maxDatagramSize ?? 0);
  if (group.complete && frames.length === 1 && frames[0]!.length < limit) {
    const body = encodeDatagram({
      subscribeId: id,
      sequence: group.sequence,
      timestamp: group.exactTimestamp,
      payload: frames[0]!,
    });
    if (body.length <= limit) {
      try {
        await core.transport.sendDatagram!(body);
      } catch (err) {
        // Best effort by nature: a datagram that cannot go is one the subscriber repairs.
        if (!core.isClosed) core.log("datagram-send", `datagram failed: ${errorText(err)}`);
      }
      core.stats.bytesSent += body.length;
      core.stats.datagramsSent++;
      return true;
    }
  }
  core.stats.datagramFallbacks++;
  return false;
}
