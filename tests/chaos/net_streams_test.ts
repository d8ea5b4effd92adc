import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { ourFeedServer } from "../support/quic_pair.ts";
import { quiet } from "../support/quiet.ts";
import { until, within } from "../support/wait.ts";
import { recordStreams } from "./net_streams.ts";

Deno.test("chaos: the group streams beneath a raw @moq/net subscription are recorded, begun and ended", async () => {
  using _ = quiet();
  const server = await ourFeedServer("moq-lite-05");
  const theirs = await Net.Connection.connect(server.url, {
    transport: server.quic as unknown as WebTransport,
  });
  await server.ours;
  server.producer.writeGroup(0, new Uint8Array([0]));
  const { result: sub, streams } = recordStreams(() =>
    theirs.consume(Net.Path.from("sluice/feed")).track("records").subscribe({ priority: 1 })
  );
  const first = await within(sub.recvGroup(), 5000, "the first group");
  for (const seq of [1, 2]) server.producer.writeGroup(seq, new Uint8Array([seq]));
  const got = [first?.sequence];
  while (got.length < 3) got.push((await within(sub.recvGroup(), 5000, "a group"))?.sequence);
  assert.deepEqual(got, [0, 1, 2]);
  assert.deepEqual([...streams.keys()].sort(), [0, 1, 2]);
  // Each ends once its stream does (a group is handed over at its header).
  await until(() => [...streams.values()].every((s) => s.ended !== undefined), "the ends");
  for (const s of streams.values()) assert.ok(s.ended! >= s.began);
  // Another subscription records apart.
  const other = recordStreams(() => ({}));
  assert.equal(other.streams.size, 0);
  theirs.close();
  server.stop();
});
