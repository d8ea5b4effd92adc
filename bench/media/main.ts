/**
 * Frame latency of a video-shaped track through `sluice relay`, next to its
 * ceiling, in one run. One track of `--frame`-byte frames at `--fps` (by
 * default 10,417 B at 30 frames/s: 2.5 Mbit/s), in groups of `--gop` frames
 * (60: a 2 s GOP), is written frame by frame; each frame carries its write
 * time, and every subscriber times each frame as it reads it (publisher write
 * → subscriber read). For each N subscribers (in a process of their own):
 *
 *   1. raw: a bare Deno QUIC sender writes the same frames to each
 *      connection, one stream per group, each frame as it is made: the
 *      ceiling;
 *   2. relay: a publisher in this process writes the track to `sluice relay`
 *      and the subscribers read it from there;
 *   3. chain: the same through two relays (the second dials the first as its
 *      PEERS), the subscribers on the second.
 *
 * Each figure: frames/s delivered of those offered, latency p50 / p99 / max,
 * and the sending process's CPU (the relays', summed, for the chain) per
 * delivered byte, against the raw sender's. `--cli` lists the `src/cli.ts` of
 * the relays to measure (default this checkout's): another checkout's gives a
 * before/after with the same ceiling in one run.
 *
 *   deno run -A bench/media/main.ts [--n 1,100,1000] [--fps 30] [--gop 60]
 *     [--frame 10417] [--seconds 8] [--warmup 3] [--only raw,relay,chain]
 *     [--cli src/cli.ts,../other/src/cli.ts]
 */
import { values } from "./options.ts";
import { benchRole } from "./bench.ts";
import { rawSenderRole } from "./raw_sender.ts";
import { receiversRole } from "./receivers.ts";

switch (values.role) {
  case "receivers":
    await receiversRole();
    break;
  case "raw-sender":
    await rawSenderRole();
    break;
  default:
    await benchRole();
}
