/** Flow-control arithmetic: credit we spend, windows we grant, stream counts, subprotocols. */
import assert from "node:assert/strict";
import { RecvWindow, SendCredit, StreamCountLimit } from "../../../src/transport/qmux/credit.ts";
import { OpenedStreams } from "../../../src/transport/qmux/stream_ids.ts";
import {
  parseSubprotocol,
  selectSubprotocol,
  subprotocolOffer,
} from "../../../src/transport/qmux/subprotocol.ts";

Deno.test("send credit: spend, raise (never lower), wake waiters", async () => {
  const c = new SendCredit(100);
  c.take(60);
  assert.equal(c.available, 40);
  c.raise(80); // a decrease is ignored
  assert.equal(c.available, 40);
  let woke = false;
  const w = c.wait().then(() => (woke = true));
  c.take(40);
  assert.equal(c.available, 0);
  assert.equal(woke, false);
  c.raise(150);
  await w;
  assert.equal(woke, true);
  assert.equal(c.available, 50);
});

Deno.test("receive window: violation beyond the limit; new limit once half is consumed", () => {
  const w = new RecvWindow(1000);
  assert.equal(w.receive(600), true);
  assert.equal(w.consume(400), undefined); // 600 of the window left: not yet
  assert.equal(w.consume(100), 1500); // 500 left = half: advertise consumed + window
  assert.equal(w.limit, 1500);
  assert.equal(w.receive(900), true); // 1500 received, exactly the limit
  assert.equal(w.receive(1), false);
});

Deno.test("stream count: limit by index, replenished in half-window batches", () => {
  const s = new StreamCountLimit(10);
  assert.equal(s.allows(9), true);
  assert.equal(s.allows(10), false);
  for (let i = 0; i < 4; i++) assert.equal(s.release(), undefined);
  assert.equal(s.release(), 15); // 5 done: room for 5 more
  assert.equal(s.allows(14), true);
  assert.equal(s.allows(15), false);
});

Deno.test("opened peer streams: implicit opens, late frames of finished streams", () => {
  const o = new OpenedStreams();
  assert.equal(o.classify(3), "new");
  o.open(3); // 0, 1, 2 implicitly open
  assert.equal(o.classify(1), "new");
  o.open(1);
  assert.equal(o.classify(1), "finished");
  assert.equal(o.classify(3), "finished");
  assert.equal(o.classify(0), "new");
  assert.equal(o.classify(4), "new");
});

Deno.test("subprotocols: offer, server preference, parsing", () => {
  assert.deepEqual(subprotocolOffer(["moq-lite-05", "moq-lite-04"], ["qmux-02", "qmux-00"]), [
    "qmux-02.moq-lite-05",
    "qmux-00.moq-lite-05",
    "qmux-02.moq-lite-04",
    "qmux-00.moq-lite-04",
  ]);
  const ours = ["moq-lite-05", "moq-lite-04"];
  // The server's order wins over the client's.
  assert.equal(
    selectSubprotocol("qmux-00.moq-lite-04, qmux-01.moq-lite-05, qmux-02.moq-lite-05", ours),
    "qmux-02.moq-lite-05",
  );
  // @moq/lite 0.2.2 with protocols ["moq-lite-04"].
  assert.equal(
    selectSubprotocol([
      "qmux-00",
      "webtransport",
      "qmux-00.moq-lite-04",
      "webtransport.moq-lite-04",
    ], ours),
    "qmux-00.moq-lite-04",
  );
  assert.equal(
    selectSubprotocol("webtransport.moq-lite-04", ours),
    "webtransport.moq-lite-04",
  );
  assert.equal(selectSubprotocol("webtransport.moq-lite-04", ours, { legacy: false }), undefined);
  // Bare drafts and the bare legacy token carry no application protocol: nothing acceptable.
  assert.equal(selectSubprotocol("qmux-02, qmux-01, qmux-00, webtransport", ours), undefined);
  assert.equal(selectSubprotocol(null, ours), undefined);
  assert.deepEqual(parseSubprotocol("qmux-01.moq-lite-05"), {
    format: "qmux-01",
    protocol: "moq-lite-05",
  });
  assert.deepEqual(parseSubprotocol("qmux-02"), { format: "qmux-02", protocol: "" });
  assert.deepEqual(parseSubprotocol("webtransport.moq-lite-04"), {
    format: "webtransport",
    protocol: "moq-lite-04",
  });
  assert.deepEqual(parseSubprotocol(""), { format: "webtransport", protocol: "" });
});
