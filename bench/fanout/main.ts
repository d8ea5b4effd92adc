/**
 * Fan-out against its ceiling, in one run: N subscriber connections each
 * receive one-stream groups of `--size` bytes
 *
 *   1. raw: a bare sender opens one uni stream per group per connection
 *      (at most 16 in flight per connection, as the moq publisher does), as
 *      fast as it can: the ceiling;
 *   2. relay: `sluice relay` serves one track to the N subscribers, published
 *      from this process at more than the ceiling allows per subscriber;
 *   3. listener: the funnel's own MoQ listener (its worker) serves one
 *      track fed with committed records at the same rate.
 *
 * Delivery starts once all N sessions are set up (at N = 1000 the sessions
 * would otherwise be connecting to a sender already busy with the first ones).
 * Senders and receivers run in separate processes. Receivers read the way
 * a fast client does (BYOB readers, group streams counted without parsing
 * frames), so they cost as little per group as a client can; on a machine
 * with few cores they still share the cores with the sender, and the CPU
 * figures below say which side was saturated. Each figure is groups/s delivered
 * over the measured window and its ratio to raw.
 *
 * With --overload the report also gives, per run, each session's delivered
 * rate (min / median / max), how the skipped groups are spread over the
 * sessions, and whether sessions that connect while the sender is saturated
 * finish their setup (SETUP and SUBSCRIBE answered); those connect from a
 * process of their own, so their setup time is not that of a process busy
 * receiving.
 *
 *   deno run -A bench/fanout/main.ts [--n 10,100,1000] [--transport quic,webtransport]
 *     [--seconds 5] [--size 100] [--overload] [--only raw,relay,listener]
 *     [--warmup 2] [--offer R] [--tick 1] [--profile DIR] [--cli PATH,...]
 *
 * `--cli` runs the relay from each `src/cli.ts` given in turn (default this
 * checkout's), each against fresh receivers and the same raw ceiling, with
 * the same publisher: another checkout's gives a before/after in one run.
 *
 * The relay's publisher and the listener's feed write the offered groups in
 * ticks of `--tick` ms: 1 (the default) spreads them out, larger ticks
 * deliver them in bursts, which the QUIC stack can pack together.
 *
 * `--only` may add `relay-ietf`: the same relay and moq-lite publisher with
 * IETF draft 16 subscribers (ALPN or WT-Protocol `moqt-16`), beside the
 * moq-lite ones of `relay`, for the relay's CPU per delivered group in each
 * dialect.
 *
 * `--only` may add `raw-turns`: the bare sender again, taking delivery turns
 * the way the serving loops do (what turns cost, and whether they make a
 * bare sender fair). The relay takes its turns per RELAY_DELIVERY_TURN_MS
 * from this environment (0 turns them off).
 *
 * With --profile the relay runs with RELAY_PPROF=1, and CPU profiles of it
 * and of the bare sender over the measured window are written to DIR
 * (summarise them with bench/support/cpuprofile_top.ts).
 *
 * Each run also reports the cores each process kept busy over the window,
 * the sender's CPU time per group delivered, and the UDP datagrams the
 * machine sent per group delivered (loopback: both directions; a batch the
 * kernel segments counts once). Senders and receivers share the machine's
 * cores, so a sender that costs more per group, or packs fewer groups into
 * each datagram, delivers fewer. The report starts with the host's UDP
 * receive buffer: below 4 MiB the relay's socket overflows at N = 100
 * (docs/relay.md, "UDP receive buffer").
 */
import { values } from "./options.ts";
import { benchRole } from "./bench.ts";
import { listenerRole } from "./listener.ts";
import { rawSenderRole } from "./raw_sender.ts";
import { receiversRole } from "./receivers.ts";

switch (values.role) {
  case "receivers":
    await receiversRole();
    break;
  case "raw-sender":
    await rawSenderRole();
    break;
  case "listener":
    await listenerRole();
    break;
  default:
    await benchRole();
}
