// The authorization matrix of IETF MoQ Transport: every control message type of the IETF codec
// (`ietfCodec.Msg`, which the session's control loop and request streams switch on) × every kind
// of credential, against a real funnel listener and a real relay with auth on. Draft 14 runs as a
// raw client over native QUIC (the credential in the setup PATH, `/?jwt=`), so every request can be
// made; draft 16 runs a raw client too, for PUBLISH (which @moq/net never sends); draft 20 runs
// @moq/net over WebTransport (the credential in the URL's `?jwt=`). A message
// type with no entry in a target's policy fails the test (and the type check), so adding one to the
// codec means declaring who may send it. See docs/security.md.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { ietfCodec as c, type MoqSession, TrackProducer } from "../../src/moq/mod.ts";
import {
  dialNetIetfWeb,
  dialOurs,
  rawClient,
  type RawIetf,
  rawIetf,
  type RawRequester,
} from "../support/moq.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import { testCertificate } from "../support/certs.ts";
import { quiet } from "../support/quiet.ts";
import { post, startLiveFunnel } from "../support/live_funnel.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { until, within } from "../support/wait.ts";
import {
  allowed,
  BROADCAST,
  type CellResult,
  type CredentialKind,
  CREDENTIALS,
  MARKER,
  MatrixKeys,
  type Need,
  READ,
  relayMetric,
  verdict,
} from "./_matrix.ts";

/** An IETF control message type, by its name in the codec. */
type Message = keyof typeof c.Msg;
/** The dialects a cell runs in: drafts 14 and 16 (raw clients) and draft 20 (@moq/net). */
type Draft = 14 | 16 | 20;

/** One policy entry: what the message needs and the drafts its cells run in, or why none run. */
type Rule = { readonly need: Need; readonly drafts: readonly Draft[] } | {
  readonly notExercised: string;
};

/** Messages no target acts on as a request: answers to its own requests, or ignored. */
const NOT_REQUESTS = {
  SubscribeOk: { notExercised: "an answer: read only for a SUBSCRIBE this side sent" },
  SubscribeError: { notExercised: "an answer: read only for a SUBSCRIBE this side sent" },
  RequestError: { notExercised: "an answer (draft 16): read only for a request this side sent" },
  PublishNamespaceOk: { notExercised: "an answer to a PUBLISH_NAMESPACE this side sent; ignored" },
  RequestOk: { notExercised: "an answer (draft 16) to a request this side sent; ignored" },
  PublishNamespaceError: { notExercised: "an answer to this side's PUBLISH_NAMESPACE; ignored" },
  Namespace: { notExercised: "sent by this side on a SUBSCRIBE_NAMESPACE stream only" },
  PublishNamespaceDone: {
    notExercised: "withdraws only a namespace this same session's admitted PUBLISH_NAMESPACE added",
  },
  Unsubscribe: { notExercised: "ends only a subscription this same session was admitted to" },
  PublishDone: { notExercised: "read only for a SUBSCRIBE this side sent" },
  PublishNamespaceCancel: { notExercised: "ignored" },
  TrackStatus: { notExercised: "an answer; ignored" },
  TrackStatusError: { notExercised: "an answer (draft 14); ignored" },
  NamespaceDone: { notExercised: "sent by this side on a SUBSCRIBE_NAMESPACE stream only" },
  SubscribeNamespaceOk: { notExercised: "an answer; ignored" },
  SubscribeNamespaceError: { notExercised: "an answer; ignored" },
  UnsubscribeNamespace: {
    notExercised: "ends only a namespace subscription this same session was admitted to",
  },
  MaxRequestId: { notExercised: "flow control of this side's request ids; no resource" },
  FetchCancel: { notExercised: "cancels only a FETCH this same session was admitted to" },
  FetchOk: { notExercised: "an answer: never read (this side sends no FETCH)" },
  FetchError: { notExercised: "an answer: never read (this side sends no FETCH)" },
  RequestsBlocked: { notExercised: "ignored" },
  PublishOk: { notExercised: "an answer: this side sends no PUBLISH" },
  PublishError: { notExercised: "an answer: this side sends no PUBLISH" },
  ServerSetup: { notExercised: "sent by this side only; a client's is a protocol violation" },
  SubscribeUpdate: {
    notExercised: "changes only a subscription this same session was admitted to",
  },
  SubscribeNamespaceStream: {
    notExercised: "the draft 18+ SUBSCRIBE_NAMESPACE: the same handler as SubscribeNamespace",
  },
  Setup: { notExercised: "the draft 17+ SETUP: admitted as ClientSetup is (draft 20 cells)" },
} as const satisfies Partial<Record<Message, Rule>>;

/** The funnel's own listener: subscribers only. */
const FUNNEL_POLICY: Readonly<Record<Message, Rule>> = {
  ...NOT_REQUESTS,
  ClientSetup: { need: { ...READ, anyPrefix: true }, drafts: [14, 20] },
  Subscribe: { need: READ, drafts: [14, 20] },
  SubscribeNamespace: { need: READ, drafts: [14, 20] },
  // A reader's credential: admitted, and its PUBLISH_NAMESPACE still refused.
  PublishNamespace: {
    need: { never: "subscribers publish nothing into the funnel", tries: "subscribe" },
    drafts: [14],
  },
  Fetch: { need: READ, drafts: [14] },
  TrackStatusRequest: { need: READ, drafts: [14] },
  // PUBLISH (draft 16): a pushed track is an announcement, refused as PUBLISH_NAMESPACE is.
  Publish: {
    need: { never: "subscribers publish nothing into the funnel", tries: "subscribe" },
    drafts: [16],
  },
  GoAway: { notExercised: "the listener never reads a subscriber's GOAWAY" },
};

/**
 * The relay. The mesh speaks moq-lite, so a credential with a peer scope is refused over IETF:
 * every "wrong scope" credential here holds `peer` among the other actions, and is refused.
 */
const RELAY_POLICY: Readonly<Record<Message, Rule>> = {
  ...NOT_REQUESTS,
  // A client session: admitted when the credential reaches anything and is not a peer's.
  ClientSetup: {
    need: { action: "subscribe", or: "publish", anyPrefix: true },
    drafts: [14, 20],
  },
  Subscribe: { need: { action: "subscribe" }, drafts: [14, 20] },
  SubscribeNamespace: { need: { action: "subscribe" }, drafts: [14, 20] },
  PublishNamespace: { need: { action: "publish" }, drafts: [14, 20] },
  Publish: { need: { action: "publish" }, drafts: [16] },
  // The mesh's fetch scope is a peer's, and no IETF session is a peer.
  Fetch: { need: { action: "subscribe" }, drafts: [14] },
  TrackStatusRequest: { need: { action: "subscribe" }, drafts: [14] },
  // Only a peer's GOAWAY moves routes, and a peer must speak moq-lite: an IETF one moves nothing.
  GoAway: { need: { never: "no IETF session is a peer", tries: "subscribe" }, drafts: [14] },
};

/** Cells that still fail, each with the branch that fixes it (see verdict in _matrix.ts). */
const KNOWN_HOLES: ReadonlyMap<string, string> = new Map();

/** Every control message type of the codec has an entry in `policy`. */
function assertEveryMessageDeclared(target: string, policy: Readonly<Record<string, Rule>>): void {
  assert.deepEqual(
    Object.keys(c.Msg).filter((m) => !(m in policy)),
    [],
    `${target}: IETF control messages with no policy entry`,
  );
}

/** A draft-14 request: resolves to "allowed" or how it was refused. */
type RawRequest = (raw: RawIetf) => Promise<string>;

/** Refused by the session's end, or by what `request` saw. */
async function outcome(raw: RawIetf, request: Promise<string>): Promise<string> {
  const closed = raw.session.closed.then((info) => `session refused (${info.code})`);
  return await Promise.race([request.catch(() => closed), closed]);
}

/**
 * A standalone FETCH of the test broadcast's first groups: FETCH_OK when
 * served, FETCH_ERROR when refused. Answered either way, it is also a barrier
 * after another message.
 */
async function fetchAnswer(raw: RawIetf, id: bigint): Promise<string> {
  await sendFetch(raw, id);
  const m = await raw.answer(c.Msg.FetchOk, c.Msg.FetchError);
  return m.type === c.Msg.FetchOk ? "allowed" : "refused (fetch-error)";
}

function sendFetch(raw: RawIetf, id: bigint): Promise<void> {
  return raw.send(
    c.Msg.Fetch,
    c.encodeFetch({
      requestId: id,
      priority: 0,
      groupOrder: 1,
      range: {
        kind: "standalone",
        path: BROADCAST,
        track: "chat",
        start: { group: 0, object: 0 },
        end: { group: 1 },
      },
    }, 14),
  );
}

const RAW: Partial<Record<Message, RawRequest>> = {
  // Admitted: a request is answered, and the session stays open.
  ClientSetup: async (raw) => (await fetchAnswer(raw, 0n), "allowed"),
  Subscribe: async (raw) => {
    await raw.send(
      c.Msg.Subscribe,
      c.encodeSubscribe({
        requestId: 0n,
        path: BROADCAST,
        track: "chat",
        priority: 128,
        groupOrder: 0,
        forward: true,
        filter: { kind: "largest-object" },
      }, 14),
    );
    const m = await raw.answer(c.Msg.SubscribeOk, c.Msg.SubscribeError);
    return m.type === c.Msg.SubscribeOk ? "allowed" : "refused (subscribe-error)";
  },
  SubscribeNamespace: async (raw) => {
    await raw.send(
      c.Msg.SubscribeNamespace,
      c.encodeNamespaceRequest({ requestId: 0n, path: "" }, 14, true),
    );
    const ok = await raw.answer(c.Msg.SubscribeNamespaceOk, c.Msg.SubscribeNamespaceError);
    if (ok.type !== c.Msg.SubscribeNamespaceOk) return "refused (subscribe-namespace-error)";
    // The namespaces already announced follow the OK in path order (MARKER first): once MARKER
    // is seen a short quiet spell ends the look; shown nothing, the sign is a second of silence.
    let wait = 1000;
    for (;;) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const quietSpell = new Promise<undefined>((
        r,
      ) => (timer = setTimeout(() => r(undefined), wait)));
      const m = await Promise.race([raw.answer(c.Msg.PublishNamespace), quietSpell]);
      clearTimeout(timer);
      if (m === undefined) return "refused (not announced)";
      const path = c.decodeNamespaceRequest(m.body, "PUBLISH_NAMESPACE", 14).path;
      if (path === BROADCAST) return "allowed";
      if (path === MARKER) wait = 300;
    }
  },
  PublishNamespace: async (raw) => {
    await raw.send(
      c.Msg.PublishNamespace,
      c.encodeNamespaceRequest({ requestId: 0n, path: BROADCAST }, 14),
    );
    const m = await raw.answer(c.Msg.PublishNamespaceOk, c.Msg.PublishNamespaceError);
    return m.type === c.Msg.PublishNamespaceOk ? "allowed" : "refused (publish-namespace-error)";
  },
  Fetch: (raw) => fetchAnswer(raw, 0n),
  TrackStatusRequest: async (raw) => {
    await raw.send(
      c.Msg.TrackStatusRequest,
      c.encodeSubscribe({
        requestId: 0n,
        path: BROADCAST,
        track: "chat",
        priority: 0,
        groupOrder: 0,
        forward: true,
        filter: { kind: "largest-object" },
      }, 14),
    );
    const m = await raw.answer(c.Msg.TrackStatus, c.Msg.TrackStatusError);
    return m.type === c.Msg.TrackStatus ? "allowed" : "refused (track-status-error)";
  },
};

/** A draft-16 request by a raw client: resolves to "allowed" or how it was refused. */
type Raw16Request = (raw: RawRequester) => Promise<string>;

const RAW16: Partial<Record<Message, Raw16Request>> = {
  // PUBLISH of the test broadcast's track: PUBLISH_OK when taken, REQUEST_ERROR when refused.
  Publish: async (raw) => {
    const body = c.encodePublish({
      requestId: 0n,
      path: BROADCAST,
      track: "pushed",
      trackAlias: 1n,
      forward: true,
    }, 16);
    const m = await (await raw.request(c.Msg.Publish, body))();
    return m.type === c.Msg.PublishOk ? "allowed" : "refused (request-error)";
  },
};

/** A draft-20 request by @moq/net: resolves to "allowed" or how it was refused. */
type NetRequest = (net: Net.Connection.Established, nudge: () => void) => Promise<string>;

/**
 * Subscribes to `path`'s `track`: allowed once a group arrives. A subscription starts at the live
 * edge, so `nudge` (which writes a group) runs until one does; a refusal ends it without one.
 */
async function netSubscribe(
  net: Net.Connection.Established,
  path: string,
  track: string,
  nudge: () => void,
): Promise<string> {
  const sub = net.consume(Net.Path.from(path)).track(track).subscribe({});
  const nudging = setInterval(nudge, 100);
  try {
    const group = await within(
      sub.recvGroup().catch(() => undefined),
      10_000,
      "a group or refusal",
    );
    return group ? "allowed" : "refused (subscribe)";
  } finally {
    clearInterval(nudging);
    sub.close();
  }
}

const NET: Partial<Record<Message, NetRequest>> = {
  // A round trip (a subscription to nothing, refused), then the session must still be open.
  ClientSetup: async (net) => {
    let closed = false;
    void net.closed.then(() => (closed = true));
    await netSubscribe(net, "matrix/none", "none", () => {});
    await new Promise((r) => setTimeout(r, 0));
    return closed ? "session refused" : "allowed";
  },
  Subscribe: (net, nudge) => netSubscribe(net, BROADCAST, "chat", nudge),
  // As on draft 14, on a SUBSCRIBE_NAMESPACE stream of its own: MARKER first, then a quiet spell.
  SubscribeNamespace: async (net) => {
    const announced = net.announced();
    let wait = 1000;
    try {
      for (;;) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const quietSpell = new Promise<undefined>((
          r,
        ) => (timer = setTimeout(() => r(undefined), wait)));
        const e = await Promise.race([announced.next().catch(() => undefined), quietSpell]);
        clearTimeout(timer);
        if (e === undefined) return "refused (not announced)";
        if (String(e.path) === BROADCAST && e.active) return "allowed";
        if (String(e.path) === MARKER) wait = 300;
      }
    } finally {
      announced.close();
    }
  },
};

/** Target-specific requests, and which of the policy's cells to run (all by default). */
interface CellOptions {
  readonly raw?: Partial<Record<Message, RawRequest>>;
  readonly net?: Partial<Record<Message, NetRequest>>;
  readonly only?: (message: Message, draft: Draft) => boolean;
}

/** Runs the cells of `policy` against `port`. */
async function runCells(
  keys: MatrixKeys,
  policy: Readonly<Record<Message, Rule>>,
  port: number,
  nudge: () => void,
  options: CellOptions = {},
): Promise<CellResult[]> {
  const results: CellResult[] = [];
  for (const [message, rule] of Object.entries(policy) as [Message, Rule][]) {
    if (!("need" in rule)) continue;
    for (const draft of rule.drafts) {
      if (options.only && !options.only(message, draft)) continue;
      const request = draft === 14
        ? options.raw?.[message] ?? RAW[message]
        : draft === 16
        ? RAW16[message]
        : options.net?.[message] ?? NET[message];
      assert.ok(request, `no draft-${draft} request written for the policy entry "${message}"`);
      for (const kind of CREDENTIALS) {
        results.push(
          await cell(
            keys,
            `${message} (draft ${draft})`,
            rule.need,
            kind,
            port,
            draft,
            request,
            nudge,
          ),
        );
      }
    }
  }
  return results;
}

/** Runs one cell: dials the draft with the kind's credential and makes the request. */
async function cell(
  keys: MatrixKeys,
  label: string,
  need: Need,
  kind: CredentialKind,
  port: number,
  draft: Draft,
  request: RawRequest | Raw16Request | NetRequest,
  nudge: () => void,
): Promise<CellResult> {
  const token = await keys.credential(kind, need);
  const expected = allowed(need, kind) ? "allowed" : "denied";
  let got: string;
  if (draft === 14) {
    const raw = await rawIetf(port, token === undefined ? undefined : `/?jwt=${token}`);
    try {
      got = await outcome(raw, (request as RawRequest)(raw));
    } finally {
      raw.session.close(0, "");
    }
  } else if (draft === 16) {
    const cert = await testCertificate();
    const session = await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
      alpn: ["moqt-16"],
      serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
    });
    try {
      const closed = session.closed.then((info) => `session refused (${info.code})`);
      const path = token === undefined ? undefined : `/?jwt=${token}`;
      const request16 = rawClient(session, 16, path).then((raw) => (request as Raw16Request)(raw));
      got = await Promise.race([request16.catch(() => closed), closed]);
    } finally {
      session.close(0, "");
    }
  } else {
    let net: Net.Connection.Established | undefined;
    try {
      net = await dialNetIetfWeb(port, "webtransport", 20, token);
      got = await (request as NetRequest)(net, nudge);
    } catch {
      got = "session refused";
    } finally {
      net?.close();
    }
  }
  return {
    cell: `${label} × ${kind}`,
    expected,
    got,
    ok: (got === "allowed") === (expected === "allowed"),
  };
}

Deno.test("authorization matrix, IETF MoQ: the funnel's own listener, drafts 14, 16 and 20, every message × every kind of credential", async () => {
  using _q = quiet();
  assertEveryMessageDeclared("funnel listener", FUNNEL_POLICY);
  const keys = await MatrixKeys.create();
  await using f = await startLiveFunnel({}, { verifier: keys.verifier });
  const poster = await keys.setup(["post"]);
  await post(f.base, `${BROADCAST}/chat`, '"hi"', poster);
  await post(f.base, `${MARKER}/chat`, '"marker"', poster);
  await keys.removeKey();
  const nudge = () => void post(f.base, `${BROADCAST}/chat`, '"more"', poster).catch(() => {});
  const problems = verdict(await runCells(keys, FUNNEL_POLICY, f.moqPort, nudge), KNOWN_HOLES);
  assert.deepEqual(problems, [], problems.join("\n"));
});

Deno.test("authorization matrix, IETF MoQ: the relay, drafts 14, 16 and 20, every message × every kind of credential", async () => {
  using _q = quiet();
  assertEveryMessageDeclared("relay", RELAY_POLICY);
  const keys = await MatrixKeys.create();
  const t = await startTestRelay({ auth: true, extra: { verifier: keys.verifier } });
  const producer = new TrackProducer({ cache: 8 });
  producer.writeGroup(1, new TextEncoder().encode("hi"));
  let sequence = 1;
  const nudge = () => producer.writeGroup(++sequence, new TextEncoder().encode("more"));
  const routed = async (path: string) => {
    const routes = await (await t.get("/routes")).json();
    return routes.paths.some((p: { path: string }) => p.path === `/${path}`);
  };
  let publisher: MoqSession | undefined;
  try {
    await keys.removeKey();
    // Publishing on draft 20 (a PUBLISH_NAMESPACE stream), before any route exists: taken, it
    // becomes the route; refused, it is counted and never becomes one.
    const publish: NetRequest = async (net) => {
      const rejected = () =>
        relayMetric(t, "sluice_relay_route_rejections_total", { reason: "unauthorized" });
      const before = await rejected();
      const broadcast = new Net.Broadcast.Producer();
      net.publish(Net.Path.from(BROADCAST), broadcast);
      let got = "";
      try {
        await until(async () => {
          if (await routed(BROADCAST)) got = "allowed";
          else if ((await rejected()) > before) got = "refused (unauthorized)";
          return got !== "";
        }, "the announcement's route or refusal");
      } finally {
        broadcast.close();
        net.close();
      }
      await until(async () => !(await routed(BROADCAST)), "the route gone");
      return got;
    };
    const results = await runCells(keys, RELAY_POLICY, t.port, nudge, {
      net: { PublishNamespace: publish },
      // PUBLISH too, before any route exists (a pushed track is an announcement).
      only: (message, draft) =>
        (message === "PublishNamespace" && draft === 20) || message === "Publish",
    });

    publisher = await dialOurs(t.port, {
      jwt: await keys.setup(["publish"]),
      moq: { serve: () => producer },
    });
    publisher.announce(BROADCAST);
    publisher.announce(MARKER);
    await until(async () => await routed(MARKER) && await routed(BROADCAST), "the routes");
    // Followed, a GOAWAY is counted; a FETCH after it is the barrier that it was read.
    const goaway: RawRequest = async (raw) => {
      const before = await relayMetric(t, "sluice_relay_peer_goaway_received_total", {
        redirect: "false",
      });
      await raw.send(c.Msg.GoAway, c.encodeGoaway("", 14));
      await fetchAnswer(raw, 0n);
      return (await relayMetric(t, "sluice_relay_peer_goaway_received_total", {
          redirect: "false",
        })) >
          before
        ? "allowed"
        : "refused (ignored)";
    };
    results.push(
      ...await runCells(keys, RELAY_POLICY, t.port, nudge, {
        raw: { GoAway: goaway },
        only: (message, draft) =>
          !(message === "PublishNamespace" && draft === 20) && message !== "Publish",
      }),
    );
    const problems = verdict(results, KNOWN_HOLES);
    assert.deepEqual(problems, [], problems.join("\n"));
  } finally {
    publisher?.close(0, "");
    await t.stop();
    keys.verifier.close();
  }
});
