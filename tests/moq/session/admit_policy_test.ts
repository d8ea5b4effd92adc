import assert from "node:assert/strict";
import { accept, connect, TrackProducer } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";

const text = (s: string) => new TextEncoder().encode(s);

for (const version of ["moq-lite-05", "moq-lite-04"] as const) {
  Deno.test(`${version}: the policy admit returns decides what the session serves and shows`, async () => {
    const pair = await quicPair(version, "/x?jwt=reader");
    const granted = new TrackProducer();
    granted.writeGroup(1, text("granted"));
    const serverP = accept(pair.server, {
      // What the options say is replaced by what admission found.
      serve: () => "not_found",
      announceFilter: () => false,
      admit: () => ({
        serve: (r) => (r.track === "granted" ? granted : "unauthorized"),
        announceFilter: (path) => path.startsWith("shown"),
      }),
    });
    const client = await connect(pair.client);
    const server = await serverP;
    server.announce("hidden/a");
    server.announce("shown/a");
    const ac = new AbortController();
    const seen: string[] = [];
    for await (const e of client.announced("", { signal: ac.signal })) {
      seen.push(e.path);
      ac.abort();
    }
    assert.deepEqual(seen, ["shown/a"]);

    const sub = client.subscribe("any", "granted", { start: 1 });
    for await (const g of sub) {
      assert.equal(new TextDecoder().decode(g.frames[0]), "granted");
      break;
    }
    const refused = client.subscribe("any", "other");
    await assert.rejects(refused.ready);
    assert.equal(server.stats.subscribeErrors.get("unauthorized"), 1);
    await pair.stop();
    await Promise.all([client.closed, server.closed]);
  });
}
