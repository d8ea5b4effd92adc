/** Shared by the never-read session tests: subscriptions opened by hand that read nothing back. */
import type { TrackProducer } from "../../../src/moq/mod.ts";
import { BidiType, encodeSubscribe } from "../../../src/moq/codec/mod.ts";
import type { Session } from "../../../src/transport/mod.ts";
import { until } from "../../support/wait.ts";

/**
 * Opens `count` moq-lite SUBSCRIBEs to `feed`/`t` on `session` (ordered, from group 0) by hand,
 * reading nothing back, and waits until `track` serves them all. The request streams' writers
 * are returned: a caller that lets them be collected may see its subscriptions end.
 */
export async function subscribeRaw(
  session: Session,
  count: number,
  track: TrackProducer,
): Promise<WritableStreamDefaultWriter<Uint8Array>[]> {
  const requests: WritableStreamDefaultWriter<Uint8Array>[] = [];
  for (let i = 0; i < count; i++) {
    const w = (await session.openBidi()).writable.getWriter();
    requests.push(w);
    await w.write(
      new Uint8Array([
        BidiType.Subscribe,
        ...encodeSubscribe({
          id: BigInt(i),
          path: "feed",
          track: "t",
          priority: 0,
          ordered: true,
          maxLatency: 0,
          start: 0,
          end: undefined,
        }),
      ]),
    );
  }
  await until(() => track.subscribers === count, "every subscription served");
  return requests;
}
