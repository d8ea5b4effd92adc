// The authorization matrix of the funnel's HTTP APIs (/tracks/ and Durable Streams /v1/stream/):
// every route × every kind of credential, against a real funnel with auth on. The routes come from
// the code, not from this file: the router's own table (funnelRoutes(...).routes) names the paths,
// and under each wildcard path every HTTP method is tried, so a method the server answers (anything
// but 405) is a route. A route with no entry in POLICY fails the test. See docs/security.md.
import assert from "node:assert/strict";
import { funnelRoutes, type FunnelService } from "../../src/funnel/mod.ts";
import { SAME_ORIGIN_ONLY } from "../../src/http/mod.ts";
import { quiet } from "../support/quiet.ts";
import { startLiveFunnel } from "../support/live_funnel.ts";
import {
  allowed,
  BROADCAST,
  type CellResult,
  CREDENTIALS,
  MatrixKeys,
  type Need,
  verdict,
} from "./_matrix.ts";

/** Methods tried under each wildcard path (fetch cannot send CONNECT or TRACE). */
const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"] as const;

/** The declared policy: `METHOD path` → what it needs. Wildcard paths list each method they answer. */
const POLICY: Readonly<Record<string, Need>> = {
  "GET /health": { public: true },
  // On the ingest address unless FUNNEL_METRICS_ADDR moves it to an internal one.
  "GET /metrics": { public: true },
  "PUT /tracks/*": { action: "post" },
  "POST /tracks/*": { action: "post" },
  "GET /tracks/*": { action: "fetch" },
  "HEAD /tracks/*": { action: "fetch" },
  "DELETE /tracks/*": { action: "redact" },
  "PUT /v1/stream/*": { action: "post" },
  // A fork reads its source: it needs fetch there as well as post on the new stream.
  "PUT /v1/stream/* (fork)": { action: "post", also: { action: "fetch", on: "room/src" } },
  // Post on the new stream alone does not let a credential copy a stream it may not read.
  "PUT /v1/stream/* (fork of a stream outside the scope)": {
    never: "no fetch on the source",
    tries: "post",
  },
  "POST /v1/stream/*": { action: "post" },
  "GET /v1/stream/*": { action: "fetch" },
  "HEAD /v1/stream/*": { action: "fetch" },
  "DELETE /v1/stream/*": { action: "redact" },
  // CORS preflight-style: answers the allowed methods and nothing else.
  "OPTIONS /v1/stream/*": { public: true },
};

/** Cells that still fail, each with the branch that fixes it (see verdict in _matrix.ts). */
const KNOWN_HOLES: ReadonlyMap<string, string> = new Map();

/** The paths the router serves, as `METHOD path` (ALL for every method), straight from its table. */
function routerTable(): string[] {
  const app = funnelRoutes({
    service: {} as FunnelService, // registration only: no request reaches it here
    verifier: undefined,
    cors: SAME_ORIGIN_ONLY,
    streams: () => Promise.resolve(new Response()),
    metrics: () => [],
  });
  return app.routes.map((r) => `${r.method} ${r.path}`);
}

/** What a request of one route carries, and where it goes, for the stream or track in `name`. */
function requestFor(
  route: string,
  base: string,
  token: string | undefined,
  state: { group?: string },
): Request {
  const [method, path, ...rest] = route.split(" ") as [string, string, ...string[]];
  const variant = rest.join(" ");
  const headers = new Headers();
  if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
  let url: string;
  let body: string | undefined;
  if (path === "/tracks/*") {
    url = `${base}/tracks/${BROADCAST}/chat`;
    if (method === "POST") body = '"hi"';
    if (method === "DELETE") url += `?group=${state.group}`;
  } else if (path === "/v1/stream/*") {
    headers.set("content-type", "text/plain");
    url = `${base}/v1/stream/${BROADCAST}/log`;
    if (method === "POST") body = "more";
    if (variant === "(fork)") {
      url = `${base}/v1/stream/${BROADCAST}/fork-${crypto.randomUUID()}`;
      headers.set("stream-forked-from", "/v1/stream/room/src/log");
    }
    if (variant === "(fork of a stream outside the scope)") {
      url = `${base}/v1/stream/${BROADCAST}/fork-${crypto.randomUUID()}`;
      headers.set("stream-forked-from", "/v1/stream/room/secret/log");
    }
  } else {
    url = `${base}${path}`;
  }
  return new Request(url, { method, headers, ...(body === undefined ? {} : { body }) });
}

Deno.test("authorization matrix, HTTP: every route of both APIs × every kind of credential, as the policy says", async () => {
  using _q = quiet();
  const keys = await MatrixKeys.create();
  await using f = await startLiveFunnel({}, { verifier: keys.verifier });
  const send = async (request: Request): Promise<Response> => {
    const response = await fetch(request);
    await response.body?.cancel();
    return response;
  };
  const setup = await keys.setup(["post", "fetch"]);
  const ok = async (request: Request) => {
    const r = await send(request);
    assert.ok(r.ok, `setup ${request.method} ${request.url}: ${r.status}`);
    return r;
  };
  const put = (path: string) =>
    ok(
      new Request(`${f.base}${path}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${setup}`, "content-type": "text/plain" },
        body: "first",
      }),
    );
  // What the cells read, fork and redact: two streams (one outside every cell's scope), a record.
  await put(`/v1/stream/${BROADCAST}/log`);
  await put("/v1/stream/room/src/log");
  await put("/v1/stream/room/secret/log");

  // 1. The routes, from the code: the router's table, then each method under the wildcard paths.
  const routes: string[] = [];
  for (const entry of routerTable()) {
    const [method, path] = entry.split(" ") as [string, string];
    if (!path.endsWith("/*")) {
      routes.push(entry);
      continue;
    }
    if (method !== "ALL") continue; // each method is found by asking the server below
    for (const m of METHODS) {
      const probe = await send(requestFor(`${m} ${path}`, f.base, setup, {}));
      if (probe.status !== 405) routes.push(`${m} ${path}`);
    }
  }
  const undeclared = routes.filter((r) => POLICY[r] === undefined);
  assert.deepEqual(undeclared, [], "routes the server answers that POLICY does not declare");
  const declaredBase = new Set(Object.keys(POLICY).map((k) => k.split(" ").slice(0, 2).join(" ")));
  assert.deepEqual(
    [...declaredBase].filter((r) => !routes.includes(r)),
    [],
    "POLICY entries for routes the server does not answer",
  );

  // 2. Every cell. Mutating routes go last (DELETE removes what the others read).
  await keys.removeKey();
  const order = (r: string) => (r.startsWith("DELETE") ? 1 : 0);
  const results: CellResult[] = [];
  for (const route of Object.keys(POLICY).sort((a, b) => order(a) - order(b))) {
    const need = POLICY[route]!;
    for (const kind of CREDENTIALS) {
      const state: { group?: string } = {};
      if (route.startsWith("DELETE /tracks/")) {
        const posted = await fetch(`${f.base}/tracks/${BROADCAST}/chat`, {
          method: "POST",
          headers: { authorization: `Bearer ${setup}` },
          body: '"to redact"',
        });
        state.group = (await posted.json()).group;
      }
      if (route.startsWith("DELETE /v1/stream/")) await put(`/v1/stream/${BROADCAST}/log`);
      const token = await keys.credential(kind, need);
      const response = await send(requestFor(route, f.base, token, state));
      const expected = allowed(need, kind) ? "allowed" : "denied";
      // Allowed: answered (2xx); denied: 401 when the credential is missing or invalid, 403 when
      // it does not reach, and for a route nobody may use, any refusal.
      const denied = response.status === 401 || response.status === 403;
      const okCell = expected === "allowed"
        ? response.ok
        : "never" in need
        ? !response.ok
        : denied && (response.status === 401) === (kind !== "wrong scope" &&
              kind !== "sibling prefix");
      results.push({
        cell: `${route} × ${kind}`,
        expected,
        got: String(response.status),
        ok: okCell,
      });
    }
  }
  const problems = verdict(results, KNOWN_HOLES);
  assert.deepEqual(problems, [], problems.join("\n"));
  assert.ok(results.length >= Object.keys(POLICY).length * CREDENTIALS.length);
});
