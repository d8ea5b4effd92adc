// The authorization matrix of MoQ: every message a peer may send (the stream types of the moq-lite
// codec, which the session's dispatcher switches on) and the relay's session classes (client,
// peer) × every kind of credential, over real QUIC sessions to a real funnel listener and a real
// relay with auth on. A stream type with no entry in a target's policy fails the test, so adding
// one to the codec means declaring who may send it. See docs/security.md.
import assert from "node:assert/strict";
import {
  codec,
  MoqError,
  type MoqSession,
  type MoqSessionOptions,
  TrackProducer,
} from "../../src/moq/mod.ts";
import { dialOurs } from "../support/moq.ts";
import { quiet } from "../support/quiet.ts";
import { post, startLiveFunnel } from "../support/live_funnel.ts";
import { startTestRelay, type TestRelay } from "../support/test_relay.ts";
import { until } from "../support/wait.ts";
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

/** A moq-lite stream type, by its name in the codec. */
type Message = keyof typeof codec.BidiType | keyof typeof codec.UniType;

/** One policy entry: the message it is about, and what it needs (or why no cell runs for it). */
type Rule =
  & { readonly message: Message }
  & ({ readonly need: Need } | { readonly notExercised: string });

/** The funnel's own listener: subscribers only. */
const FUNNEL_POLICY: Readonly<Record<string, Rule>> = {
  "SETUP (session)": { message: "Setup", need: { ...READ, anyPrefix: true } },
  "ANNOUNCE (announcements seen)": { message: "Announce", need: READ },
  "SUBSCRIBE": { message: "Subscribe", need: READ },
  "FETCH": { message: "Fetch", need: { action: "fetch", or: "subscribe" } },
  "TRACK": { message: "Track", need: READ },
  "ANNOUNCE (publishing)": {
    message: "Announce",
    notExercised: "the listener never asks a subscriber for announcements (acceptAnnounce: false)",
  },
  "GOAWAY": { message: "Goaway", notExercised: "the listener ignores a subscriber's GOAWAY" },
  "PROBE": { message: "Probe", notExercised: "an RTT ping on an admitted session; no resource" },
  "GROUP": {
    message: "Group",
    notExercised: "read only on subscriptions this side opened; the listener opens none",
  },
};

/** The relay: clients (publishers, subscribers) and peers. */
const RELAY_POLICY: Readonly<Record<string, Rule>> = {
  // Admitted when the credential reaches anything under the URL's path (here the root).
  "SETUP (client session)": { message: "Setup", need: { anyValid: true } },
  // A session whose URL says it is a peer needs a peer scope.
  "SETUP (peer link, ?peer)": { message: "Setup", need: { action: "peer", anyPrefix: true } },
  // A peer scope allows publishing and subscribing on its broadcasts, as another relay does.
  "ANNOUNCE (publishing)": { message: "Announce", need: { action: "publish", or: "peer" } },
  "ANNOUNCE (announcements seen)": {
    message: "Announce",
    need: { action: "subscribe", or: "peer" },
  },
  "SUBSCRIBE": { message: "Subscribe", need: { action: "subscribe", or: "peer" } },
  "FETCH": { message: "Fetch", need: { action: "subscribe", or: "peer" } },
  "TRACK": { message: "Track", need: { action: "subscribe", or: "peer" } },
  // Only a peer (a credential with a peer scope) moves the relay's routes with GOAWAY; a client's
  // is ignored.
  "GOAWAY": { message: "Goaway", need: { action: "peer", anyPrefix: true } },
  "PROBE": { message: "Probe", notExercised: "an RTT ping on an admitted session; no resource" },
  "GROUP": {
    message: "Group",
    notExercised: "read only on subscriptions the relay opened to a publisher it admitted",
  },
};

/** Cells that still fail, each with the branch that fixes it (see verdict in _matrix.ts). */
const KNOWN_HOLES: ReadonlyMap<string, string> = new Map();

/** Every stream type of the codec has an entry in `policy`. */
function assertEveryMessageDeclared(target: string, policy: Readonly<Record<string, Rule>>): void {
  const declared = new Set(Object.values(policy).map((r) => r.message));
  const messages = [...Object.keys(codec.BidiType), ...Object.keys(codec.UniType)];
  assert.deepEqual(
    messages.filter((m) => !declared.has(m as Message)),
    [],
    `${target}: stream types with no policy entry`,
  );
}

/** The outcome of `request` on `moq`: allowed, or how it was refused. */
async function attempt(moq: MoqSession, request: () => Promise<unknown>): Promise<string> {
  try {
    await request();
    return "allowed";
  } catch (error) {
    if (moq.isClosed) return `session refused (${(await moq.closed).code})`;
    if (error instanceof MoqError) return `refused (${error.code})`;
    throw error;
  }
}

/** A session with `jwt` (and `query`); a refused dial comes back as its closed session or undefined. */
async function dial(
  port: number,
  jwt: string | undefined,
  query?: string,
  moq?: MoqSessionOptions,
): Promise<MoqSession | undefined> {
  try {
    return await dialOurs(port, {
      ...(jwt === undefined ? {} : { jwt }),
      ...(query === undefined ? {} : { query }),
      // The refused sessions' stream failures are expected here: kept out of the output.
      moq: { log: () => {}, ...moq },
    });
  } catch (error) {
    if (error instanceof MoqError) return undefined;
    throw error;
  }
}

/** Runs one cell: dials with the kind's credential and makes the request. */
async function cell(
  keys: MatrixKeys,
  label: string,
  need: Need,
  kind: CredentialKind,
  port: number,
  request: (moq: MoqSession) => Promise<unknown>,
  options: { query?: string; moq?: MoqSessionOptions } = {},
): Promise<CellResult> {
  const token = await keys.credential(kind, need);
  const moq = await dial(port, token, options.query, options.moq);
  const expected = allowed(need, kind) ? "allowed" : "denied";
  let got: string;
  try {
    got = moq === undefined ? "session refused" : await attempt(moq, () => request(moq));
  } finally {
    moq?.close(0, "");
  }
  // A denial is a refused session or a refused request. moq-lite's SUBSCRIBE, FETCH and TRACK
  // errors do not tell "unauthorized" from "not found" on the wire (so a refusal leaks nothing);
  // the resource exists, as the right scope's cell shows.
  const denied = got.startsWith("session refused") || got === "refused (unauthorized)" ||
    got === "refused (not_found)";
  return {
    cell: `${label} × ${kind}`,
    expected,
    got,
    ok: expected === "allowed" ? got === "allowed" : denied,
  };
}

/**
 * Whether `path` is announced to this session. The current set comes in one burst, in path order
 * (MARKER first): once MARKER is seen, a short quiet spell ends the look; a credential that may
 * see neither is shown nothing at all, so for it the sign of the refusal is a second of silence.
 */
async function seesAnnounced(moq: MoqSession, path: string): Promise<void> {
  const stop = new AbortController();
  let timer = setTimeout(() => stop.abort(), 1000);
  try {
    for await (const event of moq.announced("", { signal: stop.signal })) {
      if (event.path === path && event.active) return;
      if (event.path === MARKER) {
        clearTimeout(timer);
        timer = setTimeout(() => stop.abort(), 300);
      }
    }
  } finally {
    clearTimeout(timer);
  }
  throw new MoqError("unauthorized", `${path} was not announced to this session`);
}

/** A round trip on `moq`: the other side has admitted (or refused) the session once this settles. */
async function roundTrip(moq: MoqSession): Promise<void> {
  await moq.trackInfo("matrix/none", "none").catch(() => undefined);
}

/** The session was admitted: a request on it is answered, and it stays open. */
async function admitted(moq: MoqSession): Promise<void> {
  await roundTrip(moq);
  if (moq.isClosed) throw new MoqError("unauthorized", "The session was refused");
}

Deno.test("authorization matrix, MoQ: the funnel's own listener, every message × every kind of credential", async () => {
  using _q = quiet();
  assertEveryMessageDeclared("funnel listener", FUNNEL_POLICY);
  const keys = await MatrixKeys.create();
  await using f = await startLiveFunnel({}, { verifier: keys.verifier });
  const poster = await keys.setup(["post"]);
  await post(f.base, `${BROADCAST}/chat`, '"hi"', poster);
  await post(f.base, `${MARKER}/chat`, '"marker"', poster);
  await keys.removeKey();

  const requests: Record<string, (moq: MoqSession) => Promise<unknown>> = {
    "SETUP (session)": admitted,
    "ANNOUNCE (announcements seen)": (moq) => seesAnnounced(moq, BROADCAST),
    "SUBSCRIBE": async (moq) => {
      const sub = moq.subscribe(BROADCAST, "chat");
      await sub.ready;
      sub.close();
    },
    "FETCH": (moq) => moq.fetch(BROADCAST, "chat", 1),
    "TRACK": (moq) => moq.trackInfo(BROADCAST, "chat"),
  };
  const results: CellResult[] = [];
  for (const [label, rule] of Object.entries(FUNNEL_POLICY)) {
    if (!("need" in rule)) continue;
    const request = requests[label];
    assert.ok(request, `no request written for the policy entry "${label}"`);
    for (const kind of CREDENTIALS) {
      results.push(await cell(keys, label, rule.need, kind, f.moqPort, request));
    }
  }
  const problems = verdict(results, KNOWN_HOLES);
  assert.deepEqual(problems, [], problems.join("\n"));
});

async function routePaths(t: TestRelay): Promise<string[]> {
  return (await (await t.get("/routes")).json()).paths.map((p: { path: string }) => p.path);
}

Deno.test("authorization matrix, MoQ: the relay, every message and session class × every kind of credential", async () => {
  using _q = quiet();
  assertEveryMessageDeclared("relay", RELAY_POLICY);
  const keys = await MatrixKeys.create();
  const t = await startTestRelay({ auth: true, extra: { verifier: keys.verifier } });
  const producer = new TrackProducer({ cache: 8 });
  producer.writeGroup(1, new TextEncoder().encode("hi"));
  const serve: MoqSessionOptions = { serve: () => producer };
  const sessions: MoqSession[] = [];
  try {
    await keys.removeKey();
    const results: CellResult[] = [];
    const run = async (
      label: string,
      request: (moq: MoqSession) => Promise<unknown>,
      options: { query?: string; moq?: MoqSessionOptions } = {},
    ) => {
      const rule = RELAY_POLICY[label];
      assert.ok(rule && "need" in rule, label);
      for (const kind of CREDENTIALS) {
        results.push(await cell(keys, label, rule.need, kind, t.port, request, options));
      }
    };

    // Publishing, before any route exists: a refused announcement never becomes a route. The
    // relay asks a session for its announcements only when its credential can publish somewhere;
    // the sibling prefix's is refused (counted), and a credential that cannot publish is never
    // asked, so for it the check is that no route appeared once the relay has answered it.
    const publishNeed = (RELAY_POLICY["ANNOUNCE (publishing)"] as { need: Need }).need;
    for (const kind of CREDENTIALS) {
      const rejected = () =>
        relayMetric(t, "sluice_relay_route_rejections_total", { reason: "unauthorized" });
      const before = await rejected();
      const expected = allowed(publishNeed, kind) ? "allowed" : "denied";
      const moq = await dial(t.port, await keys.credential(kind, publishNeed), undefined, serve);
      let got = "session refused";
      if (moq !== undefined) {
        moq.announce(BROADCAST);
        await roundTrip(moq);
        if (!moq.isClosed) {
          if (expected === "allowed") {
            await until(async () => (await routePaths(t)).includes(`/${BROADCAST}`), "the route");
          } else if (kind === "sibling prefix") {
            await until(async () => (await rejected()) > before, "the refusal to be counted");
          }
          got = (await routePaths(t)).includes(`/${BROADCAST}`)
            ? "allowed"
            : "refused (unauthorized)";
        }
        moq.close(0, "");
        await until(async () => !(await routePaths(t)).includes(`/${BROADCAST}`), "route gone");
      }
      results.push({
        cell: `ANNOUNCE (publishing) × ${kind}`,
        expected,
        got,
        ok: (got === "allowed") === (expected === "allowed"),
      });
    }

    const publisher = await dialOurs(t.port, {
      jwt: await keys.setup(["publish"]),
      moq: serve,
    });
    sessions.push(publisher);
    publisher.announce(BROADCAST);
    publisher.announce(MARKER);
    await until(async () => (await routePaths(t)).includes(`/${MARKER}`), "the marker route");

    await run("SETUP (client session)", admitted);
    await run("SETUP (peer link, ?peer)", admitted, { query: "peer=matrix" });
    await run("ANNOUNCE (announcements seen)", (moq) => seesAnnounced(moq, BROADCAST));
    await run("SUBSCRIBE", async (moq) => {
      const sub = moq.subscribe(BROADCAST, "chat");
      await sub.ready;
      sub.close();
    });
    await run("FETCH", (moq) => moq.fetch(BROADCAST, "chat", 1));
    await run("TRACK", (moq) => moq.trackInfo(BROADCAST, "chat"));
    const goaways = () =>
      relayMetric(t, "sluice_relay_peer_goaway_received_total", { redirect: "false" });
    // Followed: counted, and then the relay leaves the peer (closing the session) once its routes
    // are unused. Ignored: nothing counted, and the session stays open past two round trips.
    await run("GOAWAY", async (moq) => {
      await admitted(moq);
      const before = await goaways();
      await moq.sendGoaway().catch(() => undefined);
      await roundTrip(moq);
      await roundTrip(moq);
      await until(
        async () => (await goaways()) > before || !moq.isClosed,
        "the GOAWAY to be counted",
      );
      if ((await goaways()) === before) throw new MoqError("unauthorized", "GOAWAY ignored");
    });
    const problems = verdict(results, KNOWN_HOLES);
    assert.deepEqual(problems, [], problems.join("\n"));
  } finally {
    for (const s of sessions) s.close(0, "");
    await t.stop();
    keys.verifier.close();
  }
});
