import assert from "node:assert/strict";
import { CachedGroup } from "../../../src/moq/track/cached_group.ts";
import { encodeGroupStreamHeader } from "../../../src/moq/codec/messages.ts";
import { concatBytes } from "../../../src/wire/mod.ts";

const t = (s: string) => new TextEncoder().encode(s);

Deno.test("a cached group's stream bytes are the header and frames, kept per subscribe id", () => {
  const g = new CachedGroup(7, t("abc"), 0, 0);
  const a = g.stream("moq-lite-05", 0n);
  assert.equal(g.stream("moq-lite-05", 0n), a, "made once for the same id");
  const header = encodeGroupStreamHeader({ subscribeId: 0n, sequence: 7 });
  assert.deepEqual(a, concatBytes([header, g.encoded("moq-lite-05")]));
  const b = g.stream("moq-lite-05", 3n);
  assert.notEqual(b, a);
  assert.deepEqual(
    b,
    concatBytes([
      encodeGroupStreamHeader({ subscribeId: 3n, sequence: 7 }),
      g.encoded("moq-lite-05"),
    ]),
  );
});
