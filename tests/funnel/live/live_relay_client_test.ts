// The relay client's redial loop with hand-driven timers: a relay that does
// not answer is retried after the spec's 2 s, and stop() ends everything.
import assert from "node:assert/strict";
import { LivePublisher, RelayClient, type RelayState } from "../../../src/funnel/mod.ts";
import { silentLogger } from "../../../src/log/mod.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { until } from "../../support/wait.ts";

Deno.test("A relay that does not answer is redialed after 2 s, again and again, until stop", async () => {
  const udp = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const port = (udp.addr as Deno.NetAddr).port; // bound and silent: the dial gets no answer
  const publisher = new LivePublisher();
  const timers = new ManualClock();
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
    assert.deepEqual(timers.pending, [2000]);
    timers.fireNext();
    assert.equal(client.state, "connecting");
    await until(
      () => client.state === "reconnecting" && timers.pending.length === 1,
      "the second dial",
    );
    assert.deepEqual(timers.pending, [2000]);
    assert.equal(client.sessions, 0);
  } finally {
    await client.stop();
    udp.close();
    publisher.close();
  }
  assert.equal(client.state, "stopped");
  assert.deepEqual(timers.pending, [], "stop cancels the pending redial");
  assert.deepEqual(states, ["connecting", "reconnecting", "connecting", "reconnecting", "stopped"]);
});

Deno.test("stop() during a dial abandons it at once", async () => {
  const udp = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const port = (udp.addr as Deno.NetAddr).port;
  const publisher = new LivePublisher();
  const timers = new ManualClock();
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
  assert.equal(timers.pending.length, 0, "no redial is scheduled after stop");
});

Deno.test("A relay URL with another scheme is refused", () => {
  const publisher = new LivePublisher();
  assert.throws(
    () => new RelayClient({ url: new URL("http://relay/"), publisher, log: silentLogger }),
    TypeError,
  );
  publisher.close();
});
