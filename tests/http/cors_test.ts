import assert from "node:assert/strict";
import {
  cors,
  type CorsOptions,
  originPolicy,
  parseOriginList,
  parseOriginPolicy,
  SAME_ORIGIN_ONLY,
} from "../../src/http/mod.ts";

const OPTIONS: CorsOptions = {
  methods: ["GET", "POST", "OPTIONS"],
  allowHeaders: ["authorization", "content-type"],
  exposeHeaders: ["retry-after", "location"],
};

function preflightOf(origin: string): Request {
  return new Request("http://api.example/tracks/a/b", {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST" },
  });
}

Deno.test("parseOriginList reads origins, * and nothing else", () => {
  assert.deepEqual(parseOriginList("https://a.example, http://localhost:8080/"), [
    "https://a.example",
    "http://localhost:8080",
  ]);
  assert.equal(parseOriginList("https://a.example,*"), "*");
  assert.deepEqual(parseOriginList(" , "), []);
  for (const bad of ["a.example", "https://a.example/app", "ftp://a.example", "file:///x"]) {
    assert.throws(() => parseOriginList(`https://ok.example,${bad}`), (e: unknown) => {
      assert.ok(e instanceof TypeError);
      assert.ok(e.message.includes(`"${bad}"`), e.message);
      return true;
    });
  }
});

Deno.test("parseOriginPolicy: blank is same-origin only, * is any", () => {
  assert.deepEqual(parseOriginPolicy(undefined), SAME_ORIGIN_ONLY);
  assert.deepEqual(parseOriginPolicy("  "), SAME_ORIGIN_ONLY);
  assert.deepEqual(parseOriginPolicy("*"), { any: true });
  assert.deepEqual(parseOriginPolicy("https://a.example"), originPolicy(["https://a.example"]));
});

Deno.test("cors is absent for a same-origin-only policy", () => {
  assert.equal(cors(SAME_ORIGIN_ONLY, OPTIONS), undefined);
  assert.equal(cors(originPolicy([]), OPTIONS), undefined);
});

Deno.test("cors answers preflights: 204 with what is allowed, 403 for other origins", () => {
  const handler = cors(originPolicy(["https://app.example"]), OPTIONS)!;
  const ok = handler.preflight(preflightOf("https://app.example"))!;
  assert.equal(ok.status, 204);
  assert.equal(ok.headers.get("access-control-allow-origin"), "https://app.example");
  assert.equal(ok.headers.get("access-control-allow-methods"), "GET, POST, OPTIONS");
  assert.equal(ok.headers.get("access-control-allow-headers"), "authorization, content-type");
  assert.equal(ok.headers.get("access-control-max-age"), "600");
  assert.equal(ok.headers.get("vary"), "Origin");
  const refused = handler.preflight(preflightOf("https://evil.example"))!;
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get("access-control-allow-origin"), null);
  // An OPTIONS without Access-Control-Request-Method is not a preflight; nor is a POST.
  const plainOptions = new Request("http://api.example/", {
    method: "OPTIONS",
    headers: { origin: "https://app.example" },
  });
  assert.equal(handler.preflight(plainOptions), undefined);
  const post = new Request("http://api.example/", {
    method: "POST",
    headers: { origin: "https://app.example" },
  });
  assert.equal(handler.preflight(post), undefined);
});

Deno.test("cors marks responses to allowed origins only", () => {
  const handler = cors(originPolicy(["https://app.example"]), OPTIONS)!;
  const answer = (origin?: string) => {
    const request = new Request("http://api.example/", {
      method: "POST",
      headers: origin === undefined ? {} : { origin },
    });
    const response = new Response("{}", { status: 201 });
    handler.apply(request, response.headers);
    return response;
  };
  const allowed = answer("https://app.example");
  assert.equal(allowed.headers.get("access-control-allow-origin"), "https://app.example");
  assert.equal(allowed.headers.get("access-control-expose-headers"), "retry-after, location");
  assert.equal(allowed.headers.get("vary"), "Origin");
  assert.equal(allowed.headers.get("access-control-allow-methods"), null);
  assert.equal(answer("https://evil.example").headers.get("access-control-allow-origin"), null);
  assert.equal(answer().headers.get("access-control-allow-origin"), null);
});

Deno.test("cors with * allows any origin without Vary", () => {
  const handler = cors(originPolicy("*"), OPTIONS)!;
  const response = new Response(null);
  handler.apply(
    new Request("http://api.example/", { headers: { origin: "https://x.example" } }),
    response.headers,
  );
  assert.equal(response.headers.get("access-control-allow-origin"), "*");
  assert.equal(response.headers.get("vary"), null);
  assert.equal(handler.preflight(preflightOf("https://y.example"))!.status, 204);
});
