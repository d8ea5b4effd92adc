import assert from "node:assert/strict";
import {
  raiseUdpReceiveBuffer,
  readUdpReceiveBuffers,
  RECOMMENDED_UDP_RECEIVE_BUFFER,
  udpReceiveBufferAdvice,
  udpReceiveQueue,
  udpSocketDrops,
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

// A worker sends `count` datagrams of 1200 B to `port` while this thread is blocked, so nothing
// reads the socket meanwhile (Deno's QUIC endpoint is read on the JavaScript thread's event loop):
// what does not fit the receive buffer is dropped. Returns the socket's drops.
function burstWhileBlocked(port: number, count: number): number {
  const before = udpSocketDrops([port]);
  const done = new Int32Array(new SharedArrayBuffer(4));
  const code = `self.onmessage = async (e) => {
    const { port, count, done } = e.data;
    const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    const payload = new Uint8Array(1200);
    for (let i = 0; i < count; i++) {
      await conn.send(payload, { transport: "udp", hostname: "127.0.0.1", port });
    }
    conn.close();
    Atomics.store(done, 0, 1);
    Atomics.notify(done, 0);
  };`;
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  const worker = new Worker(url, { type: "module" });
  try {
    worker.postMessage({ port, count, done });
    assert.notEqual(Atomics.wait(done, 0, 0, 20_000), "timed-out", "the sender never finished");
    return udpSocketDrops([port]) - before;
  } finally {
    worker.terminate();
    URL.revokeObjectURL(url);
  }
}

const host = readUdpReceiveBuffers();
const roomy = host !== undefined && host.maxBytes >= RECOMMENDED_UDP_RECEIVE_BUFFER;
if (!roomy) {
  console.log(
    "SKIP UDP receive buffer burst tests: net.core.rmem_max is below 4 MiB (or unreadable), " +
      "so no socket may be given the recommended buffer",
  );
}

Deno.test({
  name: "UDP receive buffer: a raised QUIC socket keeps a burst it cannot read at once",
  ignore: !roomy,
  fn() {
    const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
    try {
      const size = raiseUdpReceiveBuffer(endpoint.addr.port);
      assert.ok(size !== undefined, "the socket could not be sized (FFI or /proc)");
      // The kernel reports twice what was granted.
      assert.ok(size >= 2 * RECOMMENDED_UDP_RECEIVE_BUFFER, `buffer ${size}`);
      // 1000 datagrams of 1200 B: about 2.3 MB of kernel memory, far above the common 208 KiB.
      assert.equal(burstWhileBlocked(endpoint.addr.port, 1000), 0);
    } finally {
      endpoint.close();
    }
  },
});

Deno.test({
  name: "UDP receive buffer: at the host's small default the same burst is dropped",
  // The twin that shows what the raise is for; meaningless where the default is already large.
  ignore: !roomy || host!.defaultBytes >= RECOMMENDED_UDP_RECEIVE_BUFFER,
  fn() {
    const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
    try {
      assert.ok(burstWhileBlocked(endpoint.addr.port, 1000) > 0);
    } finally {
      endpoint.close();
    }
  },
});

Deno.test("UDP receive queue: how full a QUIC socket is, while nothing reads it and after", async () => {
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  try {
    const queue = udpReceiveQueue(endpoint.addr.port);
    assert.ok(queue !== undefined, "the socket could not be found (FFI)");
    assert.equal(queue(), 0);
    // This thread stays blocked from the burst to the look: the datagrams are still queued.
    burstWhileBlocked(endpoint.addr.port, 200);
    assert.ok(queue() > 0, "the unread burst is seen");
    // Once the event loop comes round, Deno's QUIC endpoint reads (and discards) them.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(queue(), 0);
  } finally {
    endpoint.close();
  }
});
