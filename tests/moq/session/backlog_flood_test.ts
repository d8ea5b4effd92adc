/**
 * Delivery turns that wait while the relay's QUIC socket fills (`watchBacklog`) cannot tell the
 * ACKs of their own fan-out from datagrams anyone can send to the relay's port without a
 * credential. This drives turns the way the relay does (the same socket kind, buffer raise and
 * `udpReceiveQueue`) while a worker floods the port with junk the endpoint reads and drops.
 */
import assert from "node:assert/strict";
import { DeliveryTurns } from "../../../src/moq/session/delivery_turns.ts";
import { raiseUdpReceiveBuffer, udpReceiveQueue } from "../../../src/transport/mod.ts";

// Sends 1200-byte junk datagrams to `port` as fast as a worker can until told to stop.
function startFlood(port: number): { stop(): void } {
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const code = `self.onmessage = async (e) => {
    const { port, stop } = e.data;
    const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    const junk = new Uint8Array(1200).fill(0x5a);
    const to = { transport: "udp", hostname: "127.0.0.1", port };
    while (Atomics.load(stop, 0) === 0) {
      const sends = [];
      for (let i = 0; i < 64; i++) sends.push(conn.send(junk, to).catch(() => 0));
      await Promise.all(sends);
    }
    conn.close();
    self.close();
  };`;
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  const worker = new Worker(url, { type: "module" });
  worker.postMessage({ port, stop });
  return { stop: () => Atomics.store(stop, 0, 1) };
}

Deno.test({
  name: "delivery turns: a junk flood at the relay's port holds no turn back (known hole)",
  // Known hole, kept ignored: the flood pauses turns. Measured on a 2-core host (load ~3),
  // 50 loops of 50 µs sends for 3 s, 1200-byte junk at ~90 000 datagrams/s from one local
  // process: ~60-70 pauses/s, the buffer seen full (1.00) at times, and delivery ~20-25 % below
  // the same flood with the backlog unwatched (5 500 vs 7 500 and 11 300 vs 14 100 sends/s).
  // A flood the endpoint cannot drain costs every turn MAX_BACKLOG_PAUSES (20) timers of >= 1 ms
  // against its 2 ms of delivery: with the backlog held over a quarter (the same loops, the look
  // answering 1) a 1 ms pause took 2.2 ms on average at load 6 and delivery fell from ~17 200 to
  // ~850 sends/s, a twentieth. This run fails with ~100 pauses a second (309 in 3 s). Telling junk from ACKs needs QUIC's own view (quinn's), not the
  // socket's; bounding the pause time per second rather than per turn is a design choice left to
  // the maintainers.
  ignore: true,
  async fn() {
    const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
    const port = endpoint.addr.port;
    raiseUdpReceiveBuffer(port);
    const backlog = udpReceiveQueue(port);
    assert.ok(backlog, "the socket could not be found (FFI)");
    let pauses = 0;
    const turns = new DeliveryTurns({
      pause: (fn) => {
        pauses++;
        setTimeout(fn, 1);
      },
    });
    turns.watchBacklog(backlog);
    const flood = startFlood(port);
    try {
      let sends = 0;
      const end = performance.now() + 3000;
      const loop = async () => {
        while (performance.now() < end) {
          const turn = turns.wait();
          if (turn) await turn;
          const start = performance.now();
          while (performance.now() - start < 0.05); // a group's send, roughly
          sends++;
        }
      };
      await Promise.all(Array.from({ length: 50 }, loop));
      assert.ok(sends > 0);
      assert.equal(pauses, 0, `${pauses} pauses for datagrams nobody was asked to send`);
    } finally {
      flood.stop();
      endpoint.close();
    }
  },
});
