// The UDP proxy's bottleneck: datagrams leave at its rate, one after another,
// and those that find its queue full are dropped (tail drop).
import assert from "node:assert/strict";
import { Bottleneck, startUdpProxy } from "./udp_proxy.ts";
import { until } from "./wait.ts";

Deno.test("bottleneck: each datagram waits for those queued before it, and one that does not fit is dropped", () => {
  const link = new Bottleneck();
  const shape = { rateBytesPerSecond: 1000, queueBytes: 3000 };
  // 1000 B at 1000 B/s: a second each, queued one behind the other.
  assert.equal(link.admit(shape, 1000, 0), 1000);
  assert.equal(link.admit(shape, 1000, 0), 2000);
  assert.equal(link.admit(shape, 1000, 0), 3000);
  assert.equal(link.admit(shape, 1000, 0), undefined, "3000 B already queued");
  // 1.5 s later half of that left: room for one more, behind the rest.
  assert.equal(link.admit(shape, 1000, 1500), 2500);
  assert.equal(link.admit(shape, 600, 1500), undefined);
  // Once the queue is empty a datagram only takes its own time.
  assert.equal(link.admit(shape, 500, 10_000), 500);
  // Without a rate nothing waits.
  assert.equal(new Bottleneck().admit({}, 1000, 0), 0);
});

Deno.test("udp proxy: a burst through a bottleneck arrives at its rate, the rest dropped at the queue", async () => {
  const sink = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const proxy = startUdpProxy({
    targetPort: (sink.addr as Deno.NetAddr).port,
    toTarget: { rateBytesPerSecond: 100_000, queueBytes: 20_000 },
  });
  const client = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const arrivals: number[] = [];
  const reading = (async () => {
    for await (const _ of sink) arrivals.push(performance.now());
  })().catch(() => {}); // the sink closes at the end
  try {
    const to: Deno.NetAddr = { transport: "udp", hostname: "127.0.0.1", port: proxy.port };
    for (let i = 0; i < 100; i++) await client.send(new Uint8Array(1000), to);
    const c = proxy.counts.toTarget;
    // The kernel may drop a few of the burst before the proxy reads them: count what it got,
    // once the queue drained (until then what it admitted is neither forwarded nor dropped).
    await until(
      () =>
        c.forwarded > 0 && c.forwarded + c.queueDropped === c.received &&
        arrivals.length === c.forwarded,
      "the burst through the bottleneck",
    );
    assert.ok(c.received >= 50, JSON.stringify(c));
    // 20 kB of queue: at least 20 datagrams pass, and far from all of a burst.
    assert.ok(c.forwarded >= 20 && c.queueDropped >= c.received - 40, JSON.stringify(c));
    // They leave 10 ms apart (1000 B at 100 kB/s): never faster than that.
    const spread = arrivals.at(-1)! - arrivals[0]!;
    assert.ok(spread >= (arrivals.length - 1) * 10 * 0.9, `${arrivals.length} in ${spread} ms`);
    console.log(`burst of 100: ${JSON.stringify(c)}, arrivals over ${Math.round(spread)} ms`);
  } finally {
    client.close();
    await proxy.close();
    sink.close();
    await reading;
  }
});
