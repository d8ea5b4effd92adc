// One chaos run: stand up the scenario, start the subscribers, play the
// schedule's workload and faults, heal everything, wait for delivery, then
// check the invariant against every funnel's history.
import { sleep } from "../../src/timers/mod.ts";
import { fullHistory } from "../funnel/_replicas.ts";
import { startCluster } from "./cluster.ts";
import { inject } from "./faults.ts";
import { allDelivered, type Checked, checkInvariant, type HistoryRecord } from "./invariant.ts";
import { certificateHash, ClientFeed, RawSubscriber, StreamReader } from "./observers.ts";
import type { FaultEvent, Schedule } from "./schedule.ts";
import { scenarioNamed } from "./scenarios.ts";
import { appendStream, burst, createStream, Ledgerbook, postRecord, steady } from "./workload.ts";

/**
 * How long delivery may go without progress once every fault has healed: a
 * stall, not slowness, fails a run (large records through three relays on a
 * loaded host catch up for longer than that, making progress all along).
 */
const SETTLE_MS = 20_000;
/** The most delivery may take in all once every fault has healed, progressing or not. */
const SETTLE_CAP_MS = 120_000;
/** How long the subscribers may take to see their first record. */
const WARM_MS = 30_000;

/** A fault as it was applied: when it started (it waits for an earlier one on its target). */
export interface AppliedFault extends FaultEvent {
  readonly startedMs: number;
}

/** What one run did and found. */
export interface RunResult extends Checked {
  readonly schedule: Schedule;
  readonly applied: readonly AppliedFault[];
  /** Answers by status. */
  readonly answers: Readonly<Record<string, number>>;
  readonly wallMs: number;
}

async function history(base: string, track: string): Promise<HistoryRecord[]> {
  for (let attempt = 0;; attempt++) {
    try {
      return await fullHistory(base, track);
    } catch (e) {
      if (attempt >= 40) throw e;
      await sleep(250);
    }
  }
}

// What a failed run's report needs to place a loss: each funnel's skips of its live
// subscribers (the relay session among them) and learned records, and each raw
// subscription's missing groups as ranges.
async function explain(
  bases: readonly string[],
  raw: readonly RawSubscriber[],
  book: Ledgerbook,
): Promise<string[]> {
  const lines: string[] = [];
  for (const [i, b] of bases.entries()) {
    const text = await fetch(`${b}/metrics`).then((r) => r.text()).catch(() => "");
    const counters = text.split("\n").filter((l) =>
      /^sluice_funnel_(subscriber_skips|skipped_records|records_learned|relay_reconnects)_total/
        .test(l)
    ).map((l) => l.replace("sluice_funnel_", ""));
    lines.push(`  funnel-${i}: ${counters.join(", ") || "no metrics"}`);
  }
  for (const r of raw) {
    for (const sub of r.subscriptions) {
      if (sub.first === undefined) continue;
      const missing = book.acked.map((a) => a.seq + 1)
        .filter((s) => s > sub.first! && !sub.got.has(s)).sort((a, b) => a - b);
      const ranges: string[] = [];
      for (let i = 0; i < missing.length;) {
        let j = i;
        while (j + 1 < missing.length && missing[j + 1] === missing[j]! + 1) j++;
        ranges.push(i === j ? `${missing[i]}` : `${missing[i]}..${missing[j]}`);
        i = j + 1;
      }
      // A missing group that reached @moq/net was dropped there, not lost on the way.
      const reached = missing.filter((s) => sub.streams.has(s)).length;
      const spans = [...sub.streams.values()].map((s) => (s.ended ?? s.began) - s.began);
      lines.push(
        `  ${r.name} from group ${sub.first}${sub.ended ? ` (ended: ${sub.ended})` : ""}: ` +
          `missing ${ranges.join(", ") || "none"}; ${sub.empty} group(s) came reset, ` +
          `${sub.duplicates} twice, max latency ${sub.latencyMax} ms; of the missing ${reached} ` +
          `reached @moq/net; group streams over 5 s from first byte to end ` +
          `${spans.filter((ms) => ms > 5000).length}, longest ${
            Math.round(Math.max(0, ...spans))
          } ms`,
      );
    }
  }
  return lines;
}

/** Runs `schedule` once (`log` gets progress lines). */
export async function runOnce(
  schedule: Schedule,
  log: (line: string) => void = () => {},
): Promise<RunResult> {
  const began = performance.now();
  const scenario = scenarioNamed(schedule.scenario);
  await using cluster = await startCluster(scenario);
  const broadcast = `chaos/r${schedule.seed}`;
  const track = `${broadcast}/t`;
  const streamPath = `${broadcast}/ds`;
  const base0 = cluster.funnelBases[0]!;
  const book = new Ledgerbook();
  const bases = cluster.funnelBases;
  let turn = 0;
  const send = (bytes: number) => () =>
    postRecord(book, bases[turn++ % bases.length]!, track, bytes);

  const w = schedule.workload;
  const stream = w.streamAppendsPerSecond > 0;
  if (stream) await createStream(`${base0}/v1/stream/${streamPath}`);
  const raw = [
    new RawSubscriber("raw-1", cluster.subscriberPort, broadcast, "t"),
    new RawSubscriber("raw-2", cluster.subscriberPort, broadcast, "t"),
  ];
  cluster.onKilled((name) => {
    if (name === cluster.subscriberServer) raw.forEach((r) => r.resubscribe(`${name} was killed`));
  });
  const feed = new ClientFeed(
    `${base0}/tracks/${track}`,
    cluster.subscriberPort,
    await certificateHash(),
  );
  const reader = stream ? new StreamReader(`${base0}/v1/stream/${streamPath}`) : undefined;
  const stopObservers = async () => {
    await Promise.all([...raw.map((r) => r.stop()), feed.stop(), reader?.stop()]);
  };
  try {
    // Warm up: records until every subscriber has one (a subscription starts at the latest group).
    const warmUntil = performance.now() + WARM_MS;
    while (!(raw.every((r) => r.current()?.first !== undefined) && feed.records.length > 0)) {
      if (performance.now() > warmUntil) throw new Error("The subscribers never received a record");
      await send(0)();
      await sleep(200);
    }
    log(`  warm: ${book.acked.length} records, subscribers in`);

    const t0 = performance.now();
    const at = (ms: number) => sleep(Math.max(0, t0 + ms - performance.now()));
    const stop = new AbortController();
    const work: Promise<void>[] = [
      steady(stop.signal, w.ratePerSecond, send(w.recordBytes)),
      ...(stream
        ? [
          steady(stop.signal, w.streamAppendsPerSecond, () =>
            appendStream(book, `${base0}/v1/stream/${streamPath}`)),
        ]
        : []),
      ...schedule.bursts.map(async (b) => {
        await at(b.atMs);
        log(`  ${Math.round(performance.now() - t0)} ms: burst of ${b.count} × ${b.bytes} B`);
        await burst(b.count, send(b.bytes));
      }),
    ];
    const applied: AppliedFault[] = [];
    const chains = new Map<string, Promise<void>>();
    for (const f of schedule.faults) {
      const previous = chains.get(f.target) ?? Promise.resolve();
      chains.set(
        f.target,
        (async () => {
          await Promise.all([previous, at(f.atMs)]);
          const startedMs = Math.round(performance.now() - t0);
          log(
            `  ${startedMs} ms: ${f.kind} ${f.target} for ${f.forMs} ms${
              f.loss ? ` (loss ${f.loss})` : ""
            }`,
          );
          applied.push({ ...f, startedMs });
          await inject(cluster, f);
        })(),
      );
    }
    await at(schedule.durationMs);
    stop.abort();
    await Promise.all(chains.values());
    await Promise.all(work);
    log(
      `  workload done: ${book.acked.length} records and ${book.streamAcked.length} appends acknowledged`,
    );

    // Healed: records until every raw subscriber has a subscription that received one, so
    // each is judged from a known group (a subscription starts at the latest group).
    const settleUntil = performance.now() + SETTLE_MS;
    while (
      !raw.every((r) => r.current()?.first !== undefined) && performance.now() < settleUntil
    ) {
      await send(0)();
      await sleep(200);
    }
    // Delivery: wait until every subscriber has what it should, or the settle time is up.
    const delivered = (): boolean =>
      allDelivered({
        acked: book.acked,
        streamAcked: book.streamAcked,
        raw,
        feed,
        streamRead: reader?.messages,
      });
    // Anything a subscriber received since the last look counts as progress.
    const progress = (): string =>
      [feed.records.length, reader?.messages.length ?? 0, ...raw.map((r) => r.current()?.got.size)]
        .join();
    const capAt = performance.now() + SETTLE_CAP_MS;
    let seen = progress();
    let quietUntil = Math.max(settleUntil, performance.now() + SETTLE_MS);
    while (!delivered() && performance.now() < Math.min(quietUntil, capAt)) {
      await sleep(250);
      const now = progress();
      if (now !== seen) [seen, quietUntil] = [now, performance.now() + SETTLE_MS];
    }
    await stopObservers();

    // A history that cannot be read (its funnel is gone) is reported, with any crash, as a
    // violation: the acknowledged records are not there to be read.
    const unreadable: string[] = [];
    const read = (b: string, path: string) =>
      history(b, path).catch((e) => {
        unreadable.push(`${b}/tracks/${path}: ${e instanceof Error ? e.message : e}`);
        return [];
      });
    const histories = await Promise.all(bases.map((b) => read(b, track)));
    const streamHistories = stream ? await Promise.all(bases.map((b) => read(b, streamPath))) : [];
    const checked = checkInvariant({
      acked: book.acked,
      streamAcked: book.streamAcked,
      histories,
      streamHistories,
      raw,
      feed,
      streamRead: reader?.messages,
      crashes: [...cluster.crashes, ...unreadable.map((u) => `history unreadable: ${u}`)],
    });
    if (checked.violations.length > 0) {
      for (const line of await explain(bases, raw, book)) log(line);
      // Each process's output, to place the loss in its log: CHAOS_LOG_DIR=<dir>.
      const dir = Deno.env.get("CHAOS_LOG_DIR");
      if (dir) {
        await Deno.mkdir(dir, { recursive: true });
        for (const m of cluster.members.values()) {
          const file = `${dir}/${schedule.seed}-${m.name}.log`;
          const metrics = await m.metrics?.().catch((e) => `# metrics unreadable: ${e}`);
          await Deno.writeTextFile(file, m.lines().join("\n") + "\n" + (metrics ?? ""));
          log(`  ${m.name}'s output: ${file}`);
        }
      }
    }
    return {
      ...checked,
      schedule,
      applied,
      answers: Object.fromEntries(book.answers),
      wallMs: Math.round(performance.now() - began),
    };
  } finally {
    await stopObservers();
  }
}
