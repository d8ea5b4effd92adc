// Group ids (`e<epoch>-g<seq>`) against generated and hostile text.
import assert from "node:assert/strict";
import { formatGroupId, parseGroupId } from "../../src/record/mod.ts";
import { check, decodesOrRefuses, fc } from "../support/property.ts";

Deno.test("property: group ids format and parse back; any text parses or gives SyntaxError", () => {
  const id = fc.record({
    epoch: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    seq: fc.maxSafeNat(),
  }, { noNullPrototype: true });
  check(fc.property(id, (g) => {
    assert.deepEqual(parseGroupId(formatGroupId(g)), g);
  }));
  const near = id.map(formatGroupId).chain((s) =>
    fc.oneof(
      fc.constant(s),
      fc.tuple(fc.nat(s.length), fc.string({ maxLength: 3 })).map(([i, t]) =>
        s.slice(0, i) + t + s.slice(i)
      ),
    )
  );
  check(fc.property(fc.oneof(fc.string({ maxLength: 30 }), near), (t) => {
    const g = decodesOrRefuses(() => parseGroupId(t), [SyntaxError], t);
    if (g) {
      assert.ok(Number.isSafeInteger(g.epoch) && g.epoch >= 1);
      assert.ok(Number.isSafeInteger(g.seq) && g.seq >= 0);
    }
  }));
});

Deno.test("regression: the largest sequence a group id can carry parses back", () => {
  const g = { epoch: 1, seq: Number.MAX_SAFE_INTEGER };
  assert.deepEqual(parseGroupId(formatGroupId(g)), g);
  assert.throws(() => parseGroupId("e000001-g9007199254740992"), SyntaxError);
});
