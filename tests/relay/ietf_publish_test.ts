// PUBLISH (drafts 16 and 20) into the relay: a publisher pushing a track unasked. @moq/net 0.3.4
// never sends PUBLISH (its publisher announces with PUBLISH_NAMESPACE and waits for SUBSCRIBE),
// so the publisher here is a raw client made of our codec over native QUIC; the subscriber is
// @moq/net forced to the same draft, the independent peer.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { ietfCodec as c, type IetfDraft } from "../../src/moq/mod.ts";
import { connectQuicSession, type Session } from "../../src/transport/mod.ts";
import { startTestRelay, type TestRelay } from "../support/test_relay.ts";
import { dialNetIetf, rawClient } from "../support/moq.ts";
import { testCertificate } from "../support/certs.ts";
import { quiet } from "../support/quiet.ts";
import { until, within } from "../support/wait.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const PATH = "room/pushed";
const GROUPS = 20;

async function dialRaw(port: number, draft: IetfDraft): Promise<Session> {
  const cert = await testCertificate();
  return await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
    alpn: [`moqt-${draft}`],
    serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
  });
}

const publish = (requestId: bigint, track: string, alias: bigint, draft: IetfDraft) =>
  c.encodePublish({ requestId, path: PATH, track, trackAlias: alias, forward: true }, draft);

// One group of `frames` on a subgroup stream of its own, FIN ending it.
async function sendGroup(
  s: Session,
  alias: bigint,
  group: number,
  frames: readonly string[],
  draft: IetfDraft,
): Promise<void> {
  const w = (await s.openUni()).writable.getWriter();
  await w.write(c.encodeSubgroupHeader(alias, group, 128, draft));
  for (const f of frames) await w.write(c.encodeObject(enc.encode(f), draft));
  await w.close();
}

async function routed(t: TestRelay, path: string): Promise<boolean> {
  const routes = await (await t.get("/routes")).json();
  return routes.paths.some((p: { path: string }) => p.path === `/${path}`);
}

for (const draft of [16, 20] as const) {
  Deno.test(`relay ietf publish: draft ${draft}: a PUBLISHed track is routed and reaches an @moq/net subscriber in order, bytes equal`, async () => {
    using _q = quiet();
    const t = await startTestRelay();
    const pub = await dialRaw(t.port, draft);
    let net: Net.Connection.Established | undefined;
    try {
      const raw = await rawClient(pub, draft);
      const answers = await raw.request(c.Msg.Publish, publish(0n, "chat", 5n, draft));
      const ok = await answers();
      assert.equal(ok.type, draft < 17 ? c.Msg.PublishOk : c.Msg.RequestOk, "accepted");
      await until(() => routed(t, PATH), "the PUBLISH's namespace routed");
      // The same track pushed again: draft 16's DUPLICATE_SUBSCRIPTION (0x19); draft 20 allows
      // several subscriptions to a track, and the relay is not interested (UNINTERESTED, 0x20).
      const again = await (await raw.request(c.Msg.Publish, publish(2n, "chat", 6n, draft)))();
      assert.equal(again.type, c.Msg.RequestError);
      assert.equal(c.decodeRequestError(again.body, draft, 2n).code, draft < 17 ? 0x19 : 0x20);

      net = await dialNetIetf(t.port, draft);
      const sub = net.consume(Net.Path.from(PATH)).track("chat").subscribe({});
      // The subscription starts at the live edge: probe groups until one arrives.
      let group = 0;
      const probing = setInterval(() => void sendGroup(pub, 5n, group++, ["probe"], draft), 50);
      let first;
      try {
        first = await within(sub.recvGroup(), 10_000, "the first probe");
      } finally {
        clearInterval(probing);
      }
      assert.ok(first);
      await new Promise((r) => setTimeout(r, 100));
      const start = group;
      const got = new Map<number, string[]>();
      const reading = (async () => {
        while (got.size < GROUPS) {
          const g = await within(sub.recvGroup(), 10_000, `group ${got.size + 1}`);
          assert.ok(g, "the subscription ended early");
          if (g.sequence < start) continue;
          const frames: string[] = [];
          for (let f = await g.readFrame(); f; f = await g.readFrame()) {
            frames.push(dec.decode(f.payload));
          }
          got.set(g.sequence, frames);
        }
      })();
      for (let i = 0; i < GROUPS; i++) {
        const seq = start + i;
        await sendGroup(pub, 5n, seq, [`g${seq} a`, `g${seq} ${"x".repeat(i * 37)}`], draft);
      }
      await reading;
      for (let i = 0; i < GROUPS; i++) {
        const seq = start + i;
        assert.deepEqual(got.get(seq), [`g${seq} a`, `g${seq} ${"x".repeat(i * 37)}`]);
      }
      sub.close();
      // PUBLISH_DONE ends the pushed track, and its namespace goes with it.
      const done = c.encodePublishDone({ requestId: 0n, code: 0x2, streams: 0, reason: "" }, draft);
      await answers.send(c.Msg.PublishDone, done);
      await until(async () => !(await routed(t, PATH)), "the namespace withdrawn");
    } finally {
      net?.close();
      pub.close(0, "");
      await t.stop();
    }
  });
}
