import assert from "node:assert/strict";
import { DOCTOR_HEADING, runDoctor } from "../../../src/relay/mod.ts";
import type { UdpReceiveBuffers } from "../../../src/transport/mod.ts";

Deno.test("doctor prints the heading, the GC block and every setting with its source", () => {
  const lines: string[] = [];
  // Values other than the shipped ones, so each line's source reads "environment".
  const code = runDoctor(
    { RELAY_SEMI_SPACE_MB: "32", GROUP_CACHE_SIZE: "4", SLUICE_RELAY_TOKEN: "secret" },
    (l) => lines.push(l),
    { heapLimitMb: 4096 },
  );
  const out = lines.join("\n");
  assert.equal(code, 0);
  assert.equal(lines[0], DOCTOR_HEADING);
  for (const part of ["Inputs:", "Effective:", "Why:", "Guidance:"]) assert.ok(out.includes(part));
  assert.match(out, /DENO_V8_FLAGS\s+= \(unset\)/);
  assert.match(out, /young generation.*32 MiB\s+\[source: RELAY_SEMI_SPACE_MB\]/);
  assert.match(out, /GROUP_CACHE_SIZE\s+4\s+\[environment\]/);
  // Auth off (no SLUICE_AUTH_KEYS): loopback only by default.
  assert.match(out, /RELAY_ADDR\s+127\.0\.0\.1:4433\s+\[default\]/);
  assert.ok(!out.includes("secret"), "the relay token is never printed");
  assert.match(out, /RELAY_METRICS_ADDR\s+\(unset: .*loopback clients only\)\s+\[default\]/);
  assert.match(out, /RELAY_INCOMING_STREAMS\s+1000 streams per connection .*\[default\]/);
});

Deno.test("doctor reports an invalid setting and exits non-zero", () => {
  const lines: string[] = [];
  assert.equal(runDoctor({ GROUP_CACHE_SIZE: "x" }, (l) => lines.push(l), {}), 1);
  assert.match(lines.join("\n"), /GROUP_CACHE_SIZE/);
});

Deno.test("doctor shows the host's UDP receive buffer and how to raise it when it is small", () => {
  const run = (udpReceiveBuffers: UdpReceiveBuffers | null) => {
    const lines: string[] = [];
    assert.equal(runDoctor({}, (l) => lines.push(l), { udpReceiveBuffers }), 0);
    return lines.join("\n");
  };
  const small = run({ defaultBytes: 212992, maxBytes: 212992 });
  assert.match(small, /net\.core\.rmem_default = 212992/);
  assert.match(small, /Raise it: .*sysctl -w net\.core\.rmem_default=4194304/);
  const enough = run({ defaultBytes: 4194304, maxBytes: 4194304 });
  assert.match(enough, /Enough/);
  assert.ok(!enough.includes("Raise it"));
  assert.match(run(null), /UDP receive buffer[^\n]*\n\s+not readable here/);
});
