import assert from "node:assert/strict";
import {
  readUdpReceiveBuffers,
  RECOMMENDED_UDP_RECEIVE_BUFFER,
  udpReceiveBufferAdvice,
} from "../../src/transport/udp_buffers.ts";

// What `sysctl -n net.core.rmem_default net.core.rmem_max` prints.
const sysctl = (rmemDefault: string, rmemMax: string) => (names: readonly string[]): string => {
  assert.deepEqual(names, ["net.core.rmem_default", "net.core.rmem_max"]);
  return `${rmemDefault}\n${rmemMax}\n`;
};

Deno.test("UDP receive buffers: read from sysctl, advice only below the recommended size", () => {
  const small = readUdpReceiveBuffers(sysctl("212992\n", "212992\n"));
  assert.deepEqual(small, { defaultBytes: 212992, maxBytes: 212992 });
  const advice = udpReceiveBufferAdvice(small!);
  assert.match(advice!, /208 KiB/);
  assert.match(advice!, /net\.core\.rmem_default=4194304 net\.core\.rmem_max=4194304/);

  // A larger maximum is kept: the advice never lowers it.
  const bigMax = readUdpReceiveBuffers(sysctl("212992", "16777216"))!;
  assert.match(udpReceiveBufferAdvice(bigMax)!, /net\.core\.rmem_max=16777216/);

  const enough = readUdpReceiveBuffers(sysctl(String(RECOMMENDED_UDP_RECEIVE_BUFFER), "8388608"))!;
  assert.equal(udpReceiveBufferAdvice(enough), undefined);
});

Deno.test("UDP receive buffers: no sysctl, or garbled output, gives no figures", () => {
  assert.equal(
    readUdpReceiveBuffers(() => {
      throw new Deno.errors.NotFound("sysctl");
    }),
    undefined,
  );
  assert.equal(readUdpReceiveBuffers(sysctl("lots", "212992")), undefined);
  assert.equal(readUdpReceiveBuffers(sysctl("", "212992")), undefined);
});
