// The well-behaved pair that must keep working while hostile peers hammer the
// same process: on the relay a publisher and a subscriber of one track; on
// the funnel a sender POSTing records and a subscriber of its listener.
// Every group is checked: none missing, none late by more than a stall bound.
import { connect, type MoqSession, TrackProducer, VERSIONS } from "../../../src/moq/mod.ts";
import { connectQuicSession } from "../../../src/transport/mod.ts";
import { connectWebTransport } from "../../../src/transport/mod.ts";
import { HEALTHY_PATH, HEALTHY_TRACK, type Target } from "./target.ts";
import { sleep } from "../../../src/timers/mod.ts";
import { quantileTenth } from "../quantile.ts";

/** What the healthy pair needs to know of its target (it crosses to a worker). */
export type HealthyTarget = Pick<Target, "kind" | "moqPort" | "httpPort" | "certSha256" | "jwt">;

/** What the healthy pair saw. */
export interface HealthyReport {
  /** Groups (records) published. */
  readonly published: number;
  /** Groups received by the subscriber. */
  readonly received: number;
  /** Published groups the subscriber never got (counted once it is past them). */
  readonly missing: number;
  /** Longest time without a new group while groups were being published, ms. */
  readonly longestGapMs: number;
  /** Delivery latency percentiles, ms. */
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number };
  /** Groups our own subscriber dropped because its reader fell behind (not the server's doing). */
  readonly clientSkipped: number;
  /** Failures of the pair itself (a POST that was not 201, a session that ended). */
  readonly errors: readonly string[];
}

/** A running healthy pair. */
export interface HealthyPair {
  /** Figures so far. */
  report(): HealthyReport;
  /** Stops publishing, waits for the last groups, and returns the final figures. */
  stop(): Promise<HealthyReport>;
}

async function dialSubscriber(target: HealthyTarget, webTransport: boolean): Promise<MoqSession> {
  const query = `?jwt=${target.jwt.healthy}`;
  const session = webTransport
    ? await connectWebTransport(new URL(`https://localhost:${target.moqPort}/${query}`), {
      protocols: VERSIONS,
      serverCertificateHashes: [target.certSha256],
    })
    : await connectQuicSession(new URL(`moqt://localhost:${target.moqPort}/${query}`), {
      alpn: VERSIONS,
      serverCertificateHashes: [{ algorithm: "sha-256", value: target.certSha256 }],
    });
  return await connect(session, { log: () => {} });
}

/** Starts the pair in this thread; publishes one group every `intervalMs`. */
export async function runHealthyPair(target: HealthyTarget, intervalMs = 50): Promise<HealthyPair> {
  const errors: string[] = [];
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  let published = 0;
  let received = 0;
  // Groups may arrive out of order (one stream each): count what never came.
  const seen = new Set<number>();
  let first = 0; // the subscription starts at the latest group
  let highest = 0;
  let lastArrival = performance.now();
  let longestGap = 0;
  let publisher: MoqSession | undefined;
  let publish: (seq: number) => Promise<void>;

  if (target.kind === "relay") {
    const producer = new TrackProducer({ cache: 8 });
    publisher = await connect(
      await connectQuicSession(
        new URL(`moqt://localhost:${target.moqPort}/?jwt=${target.jwt.healthy}`),
        {
          alpn: VERSIONS,
          serverCertificateHashes: [{ algorithm: "sha-256", value: target.certSha256 }],
        },
      ),
      {
        serve: (r) => r.path === HEALTHY_PATH && r.track === HEALTHY_TRACK ? producer : "not_found",
        log: () => {},
      },
    );
    publisher.announce(HEALTHY_PATH);
    publish = (seq) => {
      producer.writeGroup(seq, new TextEncoder().encode(String(seq)));
      return Promise.resolve();
    };
  } else {
    const base = `http://127.0.0.1:${target.httpPort}/tracks/${HEALTHY_PATH}/${HEALTHY_TRACK}`;
    const headers = { authorization: `Bearer ${target.jwt.healthy}` };
    const put = await fetch(base, { method: "PUT", headers });
    await put.body?.cancel();
    publish = async (seq) => {
      const r = await fetch(base, { method: "POST", body: JSON.stringify({ seq }), headers });
      await r.body?.cancel();
      if (r.status !== 201) errors.push(`POST ${seq} answered ${r.status}`);
    };
  }

  const subscriber = await dialSubscriber(target, target.kind === "funnel");
  await sleep(300); // the route (relay) or the track (funnel) settles
  const sub = subscriber.subscribe(HEALTHY_PATH, HEALTHY_TRACK);
  await sub.ready;
  const reading = (async () => {
    for await (const group of sub) {
      const now = performance.now();
      const seq = target.kind === "relay"
        ? Number(new TextDecoder().decode(group.frames[0]))
        : JSON.parse(new TextDecoder().decode(group.frames[0])).payload.seq as number;
      if (first === 0) first = seq;
      seen.add(seq);
      highest = Math.max(highest, seq);
      received++;
      const t = sentAt.get(seq);
      if (t !== undefined) latencies.push(now - t);
      sentAt.delete(seq);
      longestGap = Math.max(longestGap, now - lastArrival);
      lastArrival = now;
    }
  })().catch((e) => errors.push(`subscriber: ${e}`));

  let running = true;
  const publishing = (async () => {
    let seq = 0;
    const started = performance.now();
    while (running) {
      seq++;
      sentAt.set(seq, performance.now());
      try {
        await publish(seq);
        published++;
      } catch (e) {
        errors.push(`publish ${seq}: ${e}`);
      }
      const next = started + seq * intervalMs;
      await sleep(Math.max(0, next - performance.now()));
    }
  })();
  lastArrival = performance.now();

  const report = (final = false): HealthyReport => {
    const sorted = [...latencies].sort((a, b) => a - b);
    // While running, a group counts as missing once 20 newer ones arrived; at
    // the end every published group from the first received on must be there.
    const upTo = final ? published : highest - 20;
    let missing = 0;
    for (let seq = first; first > 0 && seq <= upTo; seq++) if (!seen.has(seq)) missing++;
    return {
      published,
      received,
      missing,
      longestGapMs: Math.round(Math.max(longestGap, running ? performance.now() - lastArrival : 0)),
      latencyMs: {
        p50: quantileTenth(sorted, 0.5),
        p99: quantileTenth(sorted, 0.99),
        max: quantileTenth(sorted, 1),
      },
      clientSkipped: sub.skipped,
      errors: [...errors],
    };
  };
  return {
    report: () => report(),
    stop: async () => {
      running = false;
      await publishing;
      await sleep(1000);
      const r = report(true);
      subscriber.close(0, "done");
      publisher?.close(0, "done");
      await reading;
      return r;
    },
  };
}

/**
 * Starts the pair in a worker of its own, so the load the fuzzer or soak
 * generates in this thread cannot delay it: what it measures is the server.
 */
export async function startHealthyPair(
  target: HealthyTarget,
  intervalMs = 50,
): Promise<HealthyPair> {
  const worker = new Worker(new URL("./healthy_worker.ts", import.meta.url), { type: "module" });
  let answer: ((r: HealthyReport) => void) | undefined;
  let latest: HealthyReport | undefined;
  const started = Promise.withResolvers<void>();
  worker.onmessage = (
    e: MessageEvent<{ type: string; report?: HealthyReport; error?: string }>,
  ) => {
    const m = e.data;
    if (m.type === "started") started.resolve();
    else if (m.type === "failed") started.reject(new Error(m.error));
    else if (m.report) {
      latest = m.report;
      answer?.(m.report);
      answer = undefined;
    }
  };
  const info: HealthyTarget = {
    kind: target.kind,
    moqPort: target.moqPort,
    httpPort: target.httpPort,
    certSha256: target.certSha256,
    jwt: target.jwt,
  };
  worker.postMessage({ type: "start", target: info, intervalMs });
  await started.promise;
  const ask = (type: "report" | "stop") =>
    new Promise<HealthyReport>((resolve) => {
      answer = resolve;
      worker.postMessage({ type });
    });
  // Reports arrive every second; report() returns the latest without waiting.
  const ticker = setInterval(() => void ask("report"), 1000);
  return {
    report: () =>
      latest ?? {
        published: 0,
        received: 0,
        missing: 0,
        longestGapMs: 0,
        latencyMs: { p50: NaN, p99: NaN, max: NaN },
        clientSkipped: 0,
        errors: [],
      },
    stop: async () => {
      clearInterval(ticker);
      const r = await ask("stop");
      worker.terminate();
      return r;
    },
  };
}
