import assert from "node:assert/strict";
import { AuthError } from "../../src/auth/mod.ts";
import { HttpProblem } from "../../src/http/mod.ts";
import { CommitRefused, LedgerError } from "../../src/ledger/mod.ts";
import { errorResponse } from "../../src/funnel/error_response.ts";
import {
  GoneError,
  InvalidRequestError,
  NotFoundError,
  RateLimitedError,
} from "../../src/funnel/errors.ts";

async function problemOf(
  response: Response,
): Promise<{ status: number; detail: string; type: string }> {
  assert.equal(response.headers.get("content-type"), "application/problem+json");
  return await response.json();
}

Deno.test("errorResponse: refused credentials are 401 with the realm's challenge, or 403", async () => {
  const missing = errorResponse(new AuthError("missing", "A bearer credential is required"));
  assert.equal(missing.status, 401);
  assert.equal(missing.headers.get("www-authenticate"), 'Bearer realm="sluice"');
  assert.equal((await problemOf(missing)).detail, "A bearer credential is required");

  const expired = errorResponse(new AuthError("expired", "The credential has expired"));
  assert.equal(expired.status, 401);
  assert.equal(
    expired.headers.get("www-authenticate"),
    'Bearer realm="sluice", error="invalid_token"',
  );
  assert.equal(
    (await problemOf(expired)).detail,
    "The credential was refused: The credential has expired",
  );

  const forbidden = errorResponse(new AuthError("forbidden", "The credential does not allow x"));
  assert.equal(forbidden.status, 403);
  assert.equal(forbidden.headers.get("www-authenticate"), null);
  assert.equal((await problemOf(forbidden)).detail, "The credential does not allow x");
});

Deno.test("errorResponse: limits, missing things, bad requests and an unreachable ledger", async () => {
  const limited = errorResponse(new RateLimitedError("track", 5, "The track is over its rate"));
  assert.equal(limited.status, 429);
  assert.equal(limited.headers.get("retry-after"), "5");
  assert.equal((await problemOf(limited)).detail, "The track is over its rate");

  const missing = errorResponse(new NotFoundError("No track a/t"));
  assert.equal(missing.status, 404);
  assert.equal((await problemOf(missing)).detail, "No track a/t");

  const invalid = errorResponse(new InvalidRequestError("The group query parameter is required"));
  assert.equal(invalid.status, 400);
  await problemOf(invalid);

  const clash = errorResponse(new LedgerError("conflict", 'Track "Room/t" differs only in case'));
  assert.equal(clash.status, 409);
  assert.equal((await problemOf(clash)).detail, 'Track "Room/t" differs only in case');

  const down = errorResponse(new LedgerError("unavailable", "connection refused (10.0.0.9)"));
  assert.equal(down.status, 503);
  assert.equal(down.headers.get("retry-after"), "1");
  assert.ok(!(await problemOf(down)).detail.includes("10.0.0.9"), "backend detail stays out");
});

Deno.test("errorResponse: an HttpProblem passes through; anything else is logged as 500", async () => {
  const problem = errorResponse(new HttpProblem(405, "Use GET", { allow: "GET" }));
  assert.equal(problem.status, 405);
  assert.equal(problem.headers.get("allow"), "GET");

  const logged: unknown[] = [];
  const corrupt = new LedgerError("corrupt", "bad frame at offset 12");
  const failed = errorResponse(corrupt, (_message, error) => logged.push(error));
  assert.equal(failed.status, 500);
  assert.deepEqual(logged, [corrupt]);
  assert.ok(!(await problemOf(failed)).detail.includes("offset"));
});

Deno.test("errorResponse: each error keeps its status and names its code in the problem", async () => {
  const cases: [unknown, number, string][] = [
    [new AuthError("missing", "x"), 401, "missing"],
    [new AuthError("expired", "x"), 401, "expired"],
    [new AuthError("bad_signature", "x"), 401, "bad_signature"],
    [new AuthError("forbidden", "x"), 403, "forbidden"],
    [new RateLimitedError("sender", 2, "x"), 429, "rate_limited"],
    [new NotFoundError("x"), 404, "not_found"],
    [new GoneError("e000001-g00000005", "x"), 410, "gone"],
    [new InvalidRequestError("x"), 400, "invalid_request"],
    [new LedgerError("conflict", "x"), 409, "conflict"],
    [new LedgerError("invalid_request", "x"), 400, "invalid_request"],
    [new LedgerError("unavailable", "x"), 503, "unavailable"],
    [new HttpProblem(400, "x"), 400, "invalid_request"],
    [new HttpProblem(404, "x"), 404, "not_found"],
    [new HttpProblem(405, "x"), 405, "method_not_allowed"],
    [new HttpProblem(408, "x"), 408, "timeout"],
    [new HttpProblem(409, "x"), 409, "conflict"],
    [new HttpProblem(413, "x"), 413, "too_large"],
    [new HttpProblem(415, "x"), 415, "unsupported_media_type"],
    [new HttpProblem(503, "x"), 503, "unavailable"],
    [new CommitRefused({ seal: "closed" }), 409, "conflict"],
    // A failure inside, whatever its type, is ours: 500.
    [new LedgerError("corrupt", "x"), 500, "internal"],
    [new LedgerError("not_found", "x"), 500, "internal"],
    [new TypeError("x is undefined"), 500, "internal"],
    [new RangeError("x"), 500, "internal"],
    [new SyntaxError("x"), 500, "internal"],
    ["a string", 500, "internal"],
  ];
  for (const [error, status, code] of cases) {
    const response = errorResponse(error, () => {});
    const problem = await problemOf(response) as { status: number; code?: string };
    const name = error instanceof Error ? `${error.name}(${error.message})` : String(error);
    assert.equal(response.status, status, name);
    assert.equal(problem.status, status, name);
    assert.equal(problem.code, code, name);
  }
});

Deno.test("errorResponse: a built-in error from our own code is logged without its text shown", async () => {
  const logged: unknown[] = [];
  const bug = new TypeError("Cannot read properties of undefined (reading 'seq')");
  const response = errorResponse(bug, (_message, error) => logged.push(error));
  assert.equal(response.status, 500);
  assert.deepEqual(logged, [bug]);
  assert.ok(!(await problemOf(response)).detail.includes("seq"));
});
