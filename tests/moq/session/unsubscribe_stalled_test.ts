/**
 * A subscriber that leaves while the group being sent to it stalls mid-way
 * (its publisher stopped sending, or a relay's upstream did): the served
 * subscription ends at once, releasing its cursor (on a relay, what keeps the
 * upstream subscription), not when that group next changes, which a stalled
 * publisher may never do.
 */
import { accept, connect, LiveFrames, TrackProducer } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { until } from "../../support/wait.ts";

for (const version of ["moq-lite-05", "moq-lite-04"]) {
  Deno.test(`${version}: a subscription closed while its group stalls releases the track at once`, async () => {
    const pair = await quicPair(version);
    const producer = new TrackProducer();
    const live = new LiveFrames(0n);
    live.push(new TextEncoder().encode("first frame"));
    producer.writeGroup(0, live);
    const serverP = accept(pair.server, {
      serve: (r) => (r.path === "feed" && r.track === "t" ? producer : "not_found"),
    });
    const client = await connect(pair.client);
    const server = await serverP;
    try {
      const sub = client.subscribe("feed", "t");
      await sub.ready;
      await until(() => producer.subscribers === 1, "the subscription served");
      await until(() => server.stats.bytesSent >= 11, "the first frame sent");
      sub.close();
      await until(() => producer.subscribers === 0, "the served cursor to close");
    } finally {
      live.finish();
      client.close();
      server.close();
      await pair.stop();
    }
  });
}
