/**
 * `deno bench` view of the moq throughput loops: 1000 one-frame groups of
 * 100 B per iteration through one session, with the raw QUIC loop as the
 * baseline. For groups/s, MB/s and ratios run `deno run -A bench/moq_throughput.ts`.
 */
import { moqLoop, rawLoop } from "./moq_throughput.ts";

const GROUPS = 1000;

Deno.bench({
  name: "raw QUIC: 1000 uni streams of 100 B",
  group: "one-frame groups",
  baseline: true,
  n: 10,
  warmup: 2,
  async fn() {
    await rawLoop(GROUPS, 100, 32);
  },
});

Deno.bench({
  name: "moq-lite-05: 1000 one-frame groups of 100 B",
  group: "one-frame groups",
  n: 10,
  warmup: 2,
  async fn() {
    await moqLoop("moq-lite-05", GROUPS, 100, 32);
  },
});

Deno.bench({
  name: "moq-lite-04: 1000 one-frame groups of 100 B",
  group: "one-frame groups",
  n: 10,
  warmup: 2,
  async fn() {
    await moqLoop("moq-lite-04", GROUPS, 100, 32);
  },
});
