// Route hijack over real sessions: an impostor announces the funnel's
// broadcast, the funnel's session restarts, and subscribers must keep getting
// the funnel's records, never the impostor's. With auth on the identity is
// the credential's sub; with auth off (the compose default) the publisher's
// IP address. At the shipped grace (RELAY_PUBLISHER_GRACE_MS 10 s).
import assert from "node:assert/strict";
import { connect, type MoqSession, TrackProducer, VERSIONS } from "../../../src/moq/mod.ts";
import { connectQuicSession } from "../../../src/transport/mod.ts";
import { testCertificate } from "../../support/certs.ts";
import { dialOurs, seeAnnounced } from "../../support/moq.ts";
import { quiet } from "../../support/quiet.ts";
import { startTestRelay, type TestRelay } from "../../support/test_relay.ts";
import { until, within } from "../../support/wait.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Who dials: a credential, the address to dial from, a `peer` name claimed in the URL. */
interface Dialer {
  jwt?: string;
  host?: string;
  peer?: string;
}

/** Dials a publisher of room/1 chat whose producer already holds `groups`. */
async function publish(
  port: number,
  groups: [number, string][],
  options: Dialer = {},
): Promise<{ moq: MoqSession; producer: TrackProducer }> {
  const producer = new TrackProducer({ cache: 8 });
  for (const [seq, text] of groups) producer.writeGroup(seq, enc.encode(text));
  const serve = (r: { path: string; track: string }) =>
    r.path === "room/1" && r.track === "chat" ? producer : "not_found" as const;
  let moq: MoqSession;
  if (options.peer === undefined) {
    moq = await dialOurs(port, { ...options, moq: { serve } });
  } else {
    const c = await testCertificate();
    const session = await connectQuicSession(
      new URL(`moqt://${options.host ?? "localhost"}:${port}/?peer=${options.peer}`),
      { alpn: VERSIONS, serverCertificateHashes: [{ algorithm: "sha-256", value: c.sha256 }] },
    );
    moq = await connect(session, { serve });
  }
  moq.announce("room/1");
  return { moq, producer };
}

/**
 * The attack: a funnel publishes, an impostor announces the same broadcast,
 * the funnel's session ends and a new one (same identity) announces again.
 */
async function hijack(
  t: TestRelay,
  funnel: Dialer,
  impostor: Dialer,
  subscriber: { jwt?: string },
): Promise<string[]> {
  const first = await publish(t.port, [[1, "real 1"]], funnel);
  const sub = await dialOurs(t.port, subscriber);
  await seeAnnounced(sub, "room/1");
  const s = sub.subscribe("room/1", "chat");
  await s.ready;
  const it = s[Symbol.asyncIterator]();
  const got: string[] = [];
  const next = async () => {
    const r = await within(it.next(), 15_000, `the record after ${got.at(-1)}`);
    assert.ok(!r.done, "the subscription ended");
    got.push(dec.decode(r.value.frames[0]));
  };
  await next();
  // Forged records wait in the impostor's cache for a subscription to reach them.
  const forged = await publish(t.port, [[2, "forged 2"], [50, "forged 50"]], impostor);
  await until(
    () =>
      t.relay.metrics.routeRejectionsTotal.value({ reason: "not_owner" }) === 1 ||
      t.relay.core.routes.alternate("room/1") !== undefined,
    "the impostor's announcement to arrive",
  );
  first.moq.close(0, "restarting");
  await first.moq.closed;
  // The funnel is back well within the grace, and commits its next record.
  const back = await publish(t.port, [[1, "real 1"]], funnel);
  await until(() => t.relay.core.routes.get("room/1") !== undefined, "a route of room/1");
  back.producer.writeGroup(2, enc.encode("real 2"));
  await next();
  back.producer.writeGroup(3, enc.encode("real 3"));
  while (!got.includes("real 3") && got.filter((g) => g.startsWith("forged")).length < 2) {
    await next();
  }
  sub.close();
  forged.moq.close();
  back.moq.close();
  return got;
}

Deno.test("auth on: a credential with an overlapping publish scope cannot take over the funnel's broadcast", async () => {
  using _q = quiet();
  const t = await startTestRelay({ auth: true, shippedTimings: true });
  const scopes = [{ actions: ["publish" as const], broadcast: { prefix: "room" } }];
  try {
    const got = await hijack(
      t,
      { jwt: await t.token({ sub: "funnel", scopes }) },
      { jwt: await t.token({ sub: "mallory", scopes }) },
      {
        jwt: await t.token({
          scopes: [{ actions: ["subscribe"], broadcast: { prefix: "room" } }],
        }),
      },
    );
    assert.deepEqual(got, ["real 1", "real 2", "real 3"]);
    assert.equal(t.relay.core.routes.owner("room/1"), "sub:funnel");
  } finally {
    await t.stop();
  }
});

/** This host's first non-loopback IPv4 address, or undefined when it has none. */
const outside = Deno.networkInterfaces().find((i) =>
  i.family === "IPv4" && !i.address.startsWith("127.")
)?.address;

Deno.test({
  name: "auth off: a client from another address cannot take over the funnel's broadcast",
  ignore: outside === undefined,
  fn: async () => {
    using _q = quiet();
    // Every interface, so the impostor can come from this host's outside address.
    const t = await startTestRelay({ shippedTimings: true, extra: { hostname: "0.0.0.0" } });
    try {
      const got = await hijack(t, { host: "127.0.0.1" }, { host: outside! }, {});
      assert.deepEqual(got, ["real 1", "real 2", "real 3"]);
      assert.equal(t.relay.core.routes.owner("room/1"), "address:127.0.0.1");
    } finally {
      await t.stop();
    }
  },
});
Deno.test({
  name:
    "auth off: a client that dials in saying it is a peer cannot take over the funnel's broadcast",
  ignore: outside === undefined,
  fn: async () => {
    using _q = quiet();
    const t = await startTestRelay({ shippedTimings: true, extra: { hostname: "0.0.0.0" } });
    try {
      const got = await hijack(t, { host: "127.0.0.1" }, { host: outside!, peer: "relay-b" }, {});
      assert.deepEqual(got, ["real 1", "real 2", "real 3"]);
    } finally {
      await t.stop();
    }
  },
});
if (outside === undefined) {
  console.warn("skipped: this host has no non-loopback IPv4 address for a second client identity");
}
