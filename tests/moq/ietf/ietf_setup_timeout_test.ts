// Our IETF client's setup deadline runs on the session's injected timers: a
// relay that accepts the connection but never answers SETUP is given up when
// the clock passes the deadline, and not before.
import assert from "node:assert/strict";
import { connectIetf } from "../../../src/moq/mod.ts";
import { quicPair } from "../../support/quic_pair.ts";
import { ManualClock } from "../../support/manual_clock.ts";
import { settled, until, within } from "../../support/wait.ts";

for (const [draft, alpn] of [[16, "moqt-16"], [20, "moqt-20"]] as const) {
  Deno.test(`ietf client: draft ${draft}: an unanswered SETUP times out on the injected clock`, async () => {
    const pair = await quicPair(alpn);
    const clock = new ManualClock();
    let gaveUp = false;
    const connecting = connectIetf(pair.client, draft, { timers: clock, log: () => {} });
    connecting.then(() => gaveUp = true, () => gaveUp = true);
    try {
      await until(() => clock.pending.includes(10_000), "the setup deadline to be set");
      clock.advance(9_999);
      // Give the connect every chance to give up early, were it to.
      await settled();
      assert.equal(gaveUp, false, "not given up before the deadline");
      clock.advance(1);
      await assert.rejects(within(connecting, 5000, "the setup to fail"), /setup timed out/);
    } finally {
      await pair.stop();
    }
  });
}
