// A feed's memory over a simulated day: a funnel process with one track, a
// feed subscribed to its own listener over native QUIC (moq-lite-05, with
// its liveness probe every 1.5 s of quiet), and an injected clock moved a
// second at a time, with 2 ms of real time after each second so the probes
// are answered (a probe unanswered for 3 simulated seconds, 6 ms of real
// time, gives the session up: "reconnects" counts those). Prints the heap
// after garbage collection after a warm-up hour and each few hours after.
//
//   deno run -A bench/client_memory.ts [--hours 24]
import v8 from "node:v8";
import vm from "node:vm";
import { openFeed, post, SessionPool } from "../src/client/mod.ts";
import { ManualClock } from "../tests/support/manual_clock.ts";
import { startServers } from "../tests/client/_servers.ts";
import { benchArgs } from "./support/args.ts";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;
const heap = () => (gc(), gc(), Deno.memoryUsage().heapUsed);

const { values } = benchArgs({ hours: { type: "string", default: "24" } }, {
  usage: "deno run -A bench/client_memory.ts [--hours 24]",
});
const hours = Number(values.hours);

await using s = await startServers();
const track = s.track("memory");
await post(track, { n: 0 });
const clock = new ManualClock(Date.now());
const feed = openFeed({
  track,
  moq: s.moqt,
  serverCertificateHashes: s.hashes,
  from: "start",
  timers: clock,
  now: clock.now,
  sessions: new SessionPool(),
});
let records = 0;
const reading = (async () => {
  for await (const _ of feed) records++;
})();
while (feed.state !== "live" || records < 1) await new Promise((r) => setTimeout(r, 10));
const started = performance.now();
const hour = async () => {
  for (let i = 0; i < 3600; i++) {
    clock.advance(1000);
    await new Promise((r) => setTimeout(r, 2));
  }
};
let reconnects = 0;
feed.addEventListener("statechange", () => feed.state === "connecting" && reconnects++);
await hour(); // warm-up: code paths compiled, first allocations made
const first = heap();
console.log(`hour 1: heap ${(first / 1e6).toFixed(2)} MB`);
for (let h = 2; h <= hours; h++) {
  await hour();
  if (h % 4 === 0 || h === hours) {
    const now = heap();
    console.log(
      `hour ${h}: heap ${(now / 1e6).toFixed(2)} MB (${((now - first) / 1e3).toFixed(1)} kB ` +
        `since hour 1), state ${feed.state}, reconnects ${reconnects}`,
    );
  }
}
console.log(`simulated ${hours} h in ${((performance.now() - started) / 1000).toFixed(0)} s`);
feed.close();
await reading;
