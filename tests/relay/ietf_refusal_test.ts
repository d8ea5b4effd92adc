// Every way the relay refuses an IETF SUBSCRIBE, against the draft texts' error registries (draft
// 14's SUBSCRIBE_ERROR codes, drafts 16 and 20's REQUEST_ERROR codes), one table row per reason.
// The subscriber is a raw client of our codec over native QUIC, the credential in the setup PATH:
// @moq/net surfaces no refusal code, and cannot send a range that ends before it starts.
import assert from "node:assert/strict";
import { ietfCodec as c, type IetfDraft } from "../../src/moq/mod.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { rawClient, type RawRequester } from "../support/moq.ts";
import { testCertificate } from "../support/certs.ts";
import { quiet } from "../support/quiet.ts";

const DRAFTS = [14, 16, 20] as const;

/** One refusal: the SUBSCRIBEs sent, and the answer each draft gives the last (a code, or OK). */
interface Row {
  readonly why: string;
  /** Path, track and filter of each SUBSCRIBE, the last one the row is about. */
  readonly requests: readonly [string, string, c.SubscribeFilter][];
  readonly expect: Readonly<Record<14 | 16 | 20, number | "ok" | "n/a">>;
}

const LATEST: c.SubscribeFilter = { kind: "largest-object" };

const TABLE: readonly Row[] = [
  {
    // Draft 14 SUBSCRIBE_ERROR UNAUTHORIZED 0x1; drafts 16 and 20 REQUEST_ERROR UNAUTHORIZED 0x1.
    why: "the credential does not reach the broadcast",
    requests: [["other/x", "chat", LATEST]],
    expect: { 14: 0x1, 16: 0x1, 20: 0x1 },
  },
  {
    // Draft 14 TRACK_DOES_NOT_EXIST 0x4; drafts 16 and 20 DOES_NOT_EXIST 0x10 (0x4 is
    // MALFORMED_AUTH_TOKEN there).
    why: "no route to the broadcast",
    requests: [["room/none", "chat", LATEST]],
    expect: { 14: 0x4, 16: 0x10, 20: 0x10 },
  },
  {
    // Draft 14 INVALID_RANGE 0x5; draft 16 INVALID_RANGE 0x11. Draft 20's filter names the end
    // as a delta from the start, so it cannot end before it.
    why: "the end group is before the start group",
    requests: [["room/none", "chat", {
      kind: "absolute",
      startGroup: 5,
      startObject: 0,
      endGroup: 2,
    }]],
    expect: { 14: 0x5, 16: 0x11, 20: "n/a" },
  },
  {
    // Draft 16: at most one subscription per track and role, DUPLICATE_SUBSCRIPTION 0x19. Draft 14
    // and 20 allow several (draft 20 says so; draft 14 asks subscribers not to), so the second is
    // served as the first: refused only because the broadcast is not there.
    why: "a second SUBSCRIBE of the same track while the first runs",
    requests: [["room/none", "chat", LATEST], ["room/none", "chat", LATEST]],
    expect: { 14: 0x4, 16: 0x19, 20: 0x10 },
  },
];

const subscribe = (id: bigint, [path, track, filter]: Row["requests"][number], draft: IetfDraft) =>
  c.encodeSubscribe(
    { requestId: id, path, track, priority: 0, groupOrder: 0, forward: true, filter },
    draft,
  );

// The code of a refusal (or "ok").
function codeOf(m: c.ControlMessage, draft: IetfDraft, id: bigint): number | "ok" {
  if (m.type === c.Msg.SubscribeOk) return "ok";
  assert.equal(m.type, draft < 16 ? c.Msg.SubscribeError : c.Msg.RequestError);
  return c.decodeRequestError(m.body, draft, id).code;
}

for (const draft of DRAFTS) {
  Deno.test(`relay ietf refusals: draft ${draft}: each refused SUBSCRIBE carries the draft's code`, async () => {
    using _q = quiet();
    const t = await startTestRelay({ auth: true });
    const jwt = await t.token({
      scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
    });
    const cert = await testCertificate();
    try {
      for (const row of TABLE) {
        const want = row.expect[draft];
        if (want === "n/a") continue;
        const session = await connectQuicSession(new URL(`moqt://localhost:${t.port}/`), {
          alpn: [draft === 14 ? "moq-00" : `moqt-${draft}`],
          serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
        });
        try {
          const raw: RawRequester = await rawClient(session, draft, `/?jwt=${jwt}`);
          const asked = [];
          for (const [i, r] of row.requests.entries()) {
            asked.push({
              id: BigInt(2 * i),
              answers: await raw.request(c.Msg.Subscribe, subscribe(BigInt(2 * i), r, draft)),
            });
          }
          // On the control stream (drafts 14, 16) answers come in any order: read them all.
          const got = new Map<bigint, number | "ok">();
          if (draft >= 17) {
            for (const a of asked) got.set(a.id, codeOf(await a.answers(), draft, a.id));
          } else {
            for (let n = 0; n < asked.length; n++) {
              const m = await asked[0]!.answers();
              const id = c.decodeLeadingRequestId(m.body, draft);
              got.set(id, codeOf(m, draft, id));
            }
          }
          const last = asked[asked.length - 1]!.id;
          assert.equal(got.get(last), want, `${row.why}: draft ${draft}`);
        } finally {
          session.close(0, "");
        }
      }
    } finally {
      await t.stop();
    }
  });
}
