import assert from "node:assert/strict";
import { accept, connect, MoqError, TrackProducer } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";

const text = (s: string) => new TextEncoder().encode(s);
const str = (b: Uint8Array) => new TextDecoder().decode(b);

for (const version of ["moq-lite-05", "moq-lite-04"] as const) {
  Deno.test(`${version}: client subscribes to a server track, announcements flow, url arrives`, async () => {
    const pair = await quicPair(version, "/relay?jwt=abc");
    const track = new TrackProducer();
    track.writeGroup(10, [text("old")]);
    track.writeGroup(11, [text("a"), text("b")]);
    const serverP = accept(pair.server, {
      serve: (req) => req.path === "demo/feed" && req.track === "records" ? track : "not_found",
    });
    const client = await connect(pair.client);
    const server = await serverP;
    if (version === "moq-lite-05") {
      assert.equal(server.url?.pathname, "/relay");
      assert.equal(server.url?.searchParams.get("jwt"), "abc");
    } else {
      assert.equal(server.url, undefined);
    }
    assert.equal(client.version, version);
    server.announce("/demo/feed/");
    const seen: string[] = [];
    const ac = new AbortController();
    const watching = (async () => {
      for await (const e of client.announced("demo", { signal: ac.signal })) {
        seen.push(`${e.active ? "+" : "-"}${e.path}`);
        if (seen.length === 1) ac.abort();
      }
    })();
    await watching;
    assert.deepEqual(seen, ["+demo/feed"]);

    const sub = client.subscribe("/demo/feed", "records");
    const got: string[] = [];
    let n = 0;
    for await (const g of sub) {
      got.push(`${g.sequence}:${g.frames.map(str).join(",")}`);
      if (++n === 1) {
        track.writeGroup(12, text("c"));
      } else if (n === 2) {
        track.close();
      }
    }
    assert.deepEqual(got, ["11:a,b", "12:c"]);

    const missing = client.subscribe("nope", "records");
    await assert.rejects(missing.ready, MoqError);
    await assert.rejects(async () => {
      for await (const _ of missing) { /* nothing */ }
    }, MoqError);
    assert.equal(server.stats.subscribeErrors.get("not_found"), 1);
    assert.ok(server.stats.groupsSent >= 2);
    assert.ok(client.stats.bytesReceived > 0);
    await pair.stop();
    await Promise.all([client.closed, server.closed]);
  });
}
