// The relay client's redial loop with hand-driven timers: a relay that does
// not answer is retried after the spec's 2 s, and stop() ends everything.
import assert from "node:assert/strict";
import {
  LivePublisher,
  type RedialTimers,
  RelayClient,
  type RelayState,
} from "../../src/funnel/mod.ts";
import { silentLogger } from "../../src/log/mod.ts";
import { until } from "../support/wait.ts";

function manualTimers() {
  const pending: { fn: () => void; ms: number; cancelled: boolean }[] = [];
  const timers: RedialTimers = {
    setTimeout: (fn, ms) => {
      const t = { fn, ms, cancelled: false };
      pending.push(t);
      return t;
    },
    clearTimeout: (id) => {
      (id as { cancelled: boolean }).cancelled = true;
    },
  };
  return { timers, pending };
}

Deno.test("A relay that does not answer is redialed after 2 s, again and again, until stop", async () => {
  const udp = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const port = (udp.addr as Deno.NetAddr).port; // bound and silent: the dial gets no answer
  const publisher = new LivePublisher();
  const { timers, pending } = manualTimers();
  const states: RelayState[] = [];
  const client = new RelayClient({
    url: new URL(`moqt://127.0.0.1:${port}/`),
    publisher,
    log: silentLogger,
    timers,
    dialTimeoutMs: 200,
    onState: (s) => states.push(s),
  });
  try {
    assert.equal(client.state, "stopped");
    client.start();
    assert.equal(client.state, "connecting");
    await until(() => client.state === "reconnecting", "the dial to time out");
    assert.deepEqual(pending.map((t) => t.ms), [2000]);
    pending[0]!.fn();
    assert.equal(client.state, "connecting");
    await until(() => client.state === "reconnecting" && pending.length === 2, "the second dial");
    assert.equal(pending[1]!.ms, 2000);
    assert.equal(client.sessions, 0);
  } finally {
    await client.stop();
    udp.close();
    publisher.close();
  }
  assert.equal(client.state, "stopped");
  assert.ok(pending[1]!.cancelled, "stop cancels the pending redial");
  assert.deepEqual(states, ["connecting", "reconnecting", "connecting", "reconnecting", "stopped"]);
});

Deno.test("stop() during a dial abandons it at once", async () => {
  const udp = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const port = (udp.addr as Deno.NetAddr).port;
  const publisher = new LivePublisher();
  const { timers, pending } = manualTimers();
  const client = new RelayClient({
    url: new URL(`moqt://127.0.0.1:${port}/`),
    publisher,
    log: silentLogger,
    timers,
    dialTimeoutMs: 60_000,
  });
  client.start();
  await client.stop();
  udp.close();
  publisher.close();
  assert.equal(client.state, "stopped");
  assert.equal(pending.length, 0, "no redial is scheduled after stop");
});

Deno.test("A relay URL with another scheme is refused", () => {
  const publisher = new LivePublisher();
  assert.throws(
    () => new RelayClient({ url: new URL("http://relay/"), publisher, log: silentLogger }),
    TypeError,
  );
  publisher.close();
});
