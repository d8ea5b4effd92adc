import assert from "node:assert/strict";
import { AuthError } from "../../src/auth/mod.ts";
import { HttpProblem } from "../../src/http/mod.ts";
import { LedgerError } from "../../src/ledger/mod.ts";
import { errorResponse } from "../../src/funnel/error_response.ts";
import { InvalidRequestError, NotFoundError, RateLimitedError } from "../../src/funnel/errors.ts";

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
