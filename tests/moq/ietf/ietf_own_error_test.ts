// A failure of ours while a well-formed message is acted on (here a policy hook
// with a bug that throws RangeError) is not the peer's protocol violation: only
// a DecodeError, the peer's malformed bytes, counts against the peer.
import assert from "node:assert/strict";
import { acceptIetf, IetfCode, ietfCodec as c } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { rawClient } from "../../support/moq.ts";
import { within } from "../../support/wait.ts";

const buggy = (): boolean => {
  throw new RangeError("a bug of ours");
};

Deno.test("ietf: draft 14: our RangeError on a control message closes as INTERNAL_ERROR, not the peer's violation", async () => {
  const pair = await quicPair("moq-00");
  const logs: string[] = [];
  const moqP = acceptIetf(pair.server, { log: (l) => logs.push(l), acceptAnnounce: buggy });
  try {
    const raw = await rawClient(pair.client, 14);
    const moq = await moqP;
    await raw.request(
      c.Msg.PublishNamespace,
      c.encodeNamespaceRequest({ requestId: 0n, path: "room" }, 14),
    );
    const info = await within(pair.client.closed, 5000, "the session to close");
    assert.equal(info.code, IetfCode.Internal);
    assert.equal(moq.stats.protocolErrors, 0, "not counted against the peer");
    assert.equal(logs.length, 1);
    assert.match(logs[0]!, /a bug of ours/);
    assert.doesNotMatch(logs[0]!, /malformed/);
  } finally {
    await pair.stop();
  }
});

Deno.test("ietf: draft 20: our RangeError on a request stream fails that request only, not as a violation", async () => {
  const pair = await quicPair("moqt-20");
  const moqP = acceptIetf(pair.server, { log: () => {}, acceptAnnounce: buggy });
  try {
    const raw = await rawClient(pair.client, 20);
    const moq = await moqP;
    const announce = await raw.request(
      c.Msg.PublishNamespace,
      c.encodeNamespaceRequest({ requestId: 0n, path: "room" }, 20),
    );
    await assert.rejects(announce(), /the request stream ended/);
    assert.equal(moq.stats.protocolErrors, 0, "not counted against the peer");
    assert.ok(!moq.isClosed, "the session stays");
    // The session still answers the peer's next request.
    const sub = await raw.request(
      c.Msg.Subscribe,
      c.encodeSubscribe({
        requestId: 2n,
        path: "room",
        track: "chat",
        priority: 0,
        groupOrder: 0,
        forward: true,
        filter: { kind: "largest-object" },
      }, 20),
    );
    assert.equal((await sub()).type, c.Msg.RequestError);
  } finally {
    await pair.stop();
  }
});
