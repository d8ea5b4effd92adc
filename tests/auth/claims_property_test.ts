// Scopes, claims and broadcast paths against generated and hostile JSON.
import assert from "node:assert/strict";
import { type CredentialClaims, parseClaims } from "../../src/auth/claims.ts";
import { ClaimsError } from "../../src/auth/errors.ts";
import { ACTIONS, parseScope, type Scope, scopeAllows } from "../../src/auth/scope.ts";
import {
  joinPath,
  normalizePath,
  pathProblem,
  pathSuffix,
  prefixCovers,
  trackNameProblem,
} from "../../src/path/mod.ts";
import { check, decodesOrRefuses, fc } from "../support/property.ts";

const segment = fc.string({ unit: "grapheme", minLength: 1, maxLength: 8 })
  .filter((s) => trackNameProblem(s) === undefined);
const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join("/"));
const actions = fc.uniqueArray(fc.constantFrom(...ACTIONS), { minLength: 1 });
const scope: fc.Arbitrary<Scope> = fc.record({
  actions,
  broadcast: fc.oneof(
    path.map((exact) => ({ exact })),
    fc.oneof(fc.constant(""), path).map((prefix) => ({ prefix })),
  ),
  track: segment.map((exact) => ({ exact })),
}, { requiredKeys: ["actions", "broadcast"], noNullPrototype: true }) as fc.Arbitrary<Scope>;

const claims = fc.record({
  iat: fc.nat({ max: 2e9 }),
  life: fc.integer({ min: 1, max: 3600 }),
  sub: fc.option(fc.string({ minLength: 1, maxLength: 10 }), { nil: undefined }),
  scopes: fc.array(scope, { maxLength: 4 }),
}, { noNullPrototype: true }).map(({ iat, life, sub, scopes }) => {
  const c: Record<string, unknown> = { iat, nbf: iat, exp: iat + life, scopes };
  if (sub !== undefined) c.sub = sub;
  return c;
});

/** Mutates a JSON value the way a forger would: drop, replace or add a member anywhere. */
function mutateJson(value: unknown, pick: number, replacement: unknown): unknown {
  let n = pick;
  const walk = (v: unknown): unknown => {
    if (n-- === 0) return replacement;
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === "object" && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        if (n-- === 0) continue; // dropped
        out[k] = walk(x);
      }
      return out;
    }
    return v;
  };
  return walk(value);
}

Deno.test("property: claims read back what was signed, scope for scope", () => {
  check(fc.property(claims, (c) => {
    const parsed = parseClaims(JSON.parse(JSON.stringify(c)));
    assert.deepEqual(parsed.scopes, c.scopes);
    assert.equal(parsed.sub, c.sub);
    assert.equal(parsed.exp, c.exp);
  }));
});

Deno.test("property: any JSON, or claims with a member forged, parse or give a ClaimsError", () => {
  const forged = fc.tuple(claims, fc.nat(40), fc.jsonValue({ maxDepth: 2 })).map(([c, at, v]) =>
    mutateJson(c, at, v)
  );
  check(
    fc.property(fc.oneof(fc.jsonValue({ maxDepth: 4 }), forged), (value) => {
      const text = JSON.stringify(value) ?? "null";
      const parsed: CredentialClaims | undefined = decodesOrRefuses(
        () => parseClaims(JSON.parse(text)),
        [ClaimsError],
        text,
      );
      if (!parsed) return;
      // Whatever is accepted is well-formed: every scope re-parses to itself.
      for (const s of parsed.scopes) assert.deepEqual(parseScope(JSON.parse(JSON.stringify(s))), s);
      assert.ok(parsed.exp > parsed.iat && parsed.exp - parsed.iat <= 3600);
    }),
    2000,
  );
});

Deno.test("property: a scope allows exactly its actions on the paths it covers", () => {
  check(fc.property(scope, path, segment, fc.constantFrom(...ACTIONS), (s, p, t, action) => {
    const inside = "exact" in s.broadcast ? s.broadcast.exact : joinPath(s.broadcast.prefix, p);
    const allowed = scopeAllows(s, action, inside, s.track?.exact ?? t);
    assert.equal(allowed, s.actions.includes(action));
    if (s.track !== undefined && t !== s.track.exact) {
      assert.equal(scopeAllows(s, action, inside, t), false);
    }
    // A sibling that only shares a string prefix is never covered.
    const base = "exact" in s.broadcast ? s.broadcast.exact : s.broadcast.prefix;
    if (base !== "") assert.equal(scopeAllows(s, action, base + "x", t), false);
  }));
});

Deno.test("property: broadcast paths normalise, join and split consistently", () => {
  const loose = fc.array(fc.oneof(segment, fc.constant("")), { maxLength: 5 }).map((s) =>
    s.join("/")
  );
  check(fc.property(loose, loose, (a, b) => {
    const p = normalizePath(a);
    assert.equal(normalizePath(p), p);
    assert.equal(pathProblem(p, true), undefined);
    const joined = joinPath(p, b);
    assert.ok(prefixCovers(p, joined));
    assert.equal(pathSuffix(joined, p), normalizePath(b));
  }));
  check(fc.property(fc.string({ maxLength: 40 }), fc.string({ maxLength: 40 }), (a, b) => {
    // Total on any text: a predicate, never an exception.
    pathProblem(a, true);
    prefixCovers(normalizePath(a), normalizePath(b));
  }));
});
