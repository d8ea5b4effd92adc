/** The consuming side's group streams: frames read within the session's size budgets. */
import { checkTimestamp, decodeGroupHeader, MAX_CONTROL_MESSAGE } from "../codec/mod.ts";
import { DecodeError, type StreamReader, zigzagDecode } from "../../wire/mod.ts";
import type { SessionCore } from "./core.ts";

/** Reads one group stream (after its type) into the subscription it belongs to. */
export async function receiveGroup(core: SessionCore, r: StreamReader): Promise<void> {
  const header = decodeGroupHeader(await r.message("GROUP", MAX_CONTROL_MESSAGE));
  const sub = core.subs.get(header.subscribeId);
  if (!sub) {
    if (header.subscribeId >= core.nextSubscribeId) {
      core.stats.protocolErrors++;
      core.log("group-id", `group for unknown subscription ${header.subscribeId}`);
    }
    return;
  }
  sub._receiving(1);
  let total = 0;
  try {
    const maxFrame = core.options.maxFrameSize ?? 16 << 20;
    const maxGroup = core.options.maxGroupSize ?? 64 << 20;
    const frames: Uint8Array[] = [];
    let ts = 0n;
    let first: bigint | undefined;
    while (!(await r.done())) {
      if (core.version === "moq-lite-05") {
        ts = checkTimestamp(ts + zigzagDecode(await r.u62("timestamp delta")));
        first ??= ts;
      }
      const size = await r.u53("frame size");
      if (size > maxFrame || total + size > maxGroup) {
        throw new DecodeError("too-large", `Cannot read frame of ${size} bytes: over the limit`);
      }
      // All partially received groups of the session share one budget, so a
      // peer cannot make us hold many large half-sent groups at once.
      if (core.buffered + size > (core.options.maxBufferedBytes ?? 128 << 20)) {
        throw new DecodeError("too-large", "Cannot buffer more partially received groups");
      }
      total += size;
      core.buffered += size;
      frames.push(await r.bytes(size, "frame"));
    }
    core.deliver(sub, {
      sequence: header.sequence,
      frames,
      timestamp: Number(first ?? 0n),
      exactTimestamp: first ?? 0n,
    });
  } finally {
    core.buffered -= total;
    sub._receiving(-1);
    sub._maybeFinish(250);
  }
}
