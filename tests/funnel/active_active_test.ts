// Two funnel processes on one PostgreSQL ledger act as one service: both take POSTs for
// one track while each is SIGKILLed and restarted in turn; records are posted through
// either (a failed POST is retried on the other with its Idempotency-Key, as behind a
// load balancer), and keys are also sent to both on purpose. Afterwards both histories
// are identical, every acknowledged record is there once, in one order, and an @moq/net
// subscriber on the relay (which holds the two funnels as two routes of the broadcast)
// received every acknowledged record exactly once. Shipped defaults throughout.
import assert from "node:assert/strict";
import * as Net from "@moq/net";
import { parseGroupId } from "../../src/ledger/mod.ts";
import { sleep } from "../../src/timers/mod.ts";
import { testCertificateFiles } from "../support/certs.ts";
import { dialNet } from "../support/moq.ts";
import { dropTable, findPostgres, freshTableName, postgresMissing } from "../support/postgres.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import { quiet } from "../support/quiet.ts";
import { ignoreWithout } from "../support/requires.ts";
import { until } from "../support/wait.ts";
import {
  fullHistory,
  type FunnelProcess,
  type RelayUnderTest,
  startFunnelProcess,
  startRelay,
} from "./_replicas.ts";

const pgUrl = await findPostgres();
const TRACK = "room/1/chat";
const POSTERS = 6;
/** Pause between one poster's records: about 120 records/s from six posters, as reported. */
const PAUSE_MS = 40;

Deno.test({
  name:
    "two funnels on one PostgreSQL ledger, each SIGKILLed and restarted: one order, no loss, no duplicate",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  fn: async () => {
    using _q = quiet();
    const table = freshTableName();
    const ledger = `${pgUrl}?table=${table}`;
    const files = await testCertificateFiles();
    let relay: RelayUnderTest | undefined;
    const funnels: FunnelProcess[] = [];
    let net: Awaited<ReturnType<typeof dialNet>> | undefined;
    try {
      relay = await startRelay(files);
      funnels.push(await startFunnelProcess(ledger, relay, files));
      funnels.push(await startFunnelProcess(ledger, relay, files));
      assert.equal(
        (await fetch(`${funnels[0]!.base}/tracks/${TRACK}`, { method: "PUT" })).status,
        201,
      );
      const r = relay;
      // Both funnels announce the broadcast: one route, and the other kept as its alternate.
      await until(async () => {
        const text = await (await r.get("/metrics")).text();
        return sampleValue(families(text), "sluice_relay_routes_retained") === 1;
      }, "the relay to hold both funnels as routes");

      net = await dialNet(relay.port);
      const sub = net.consume(Net.Path.from("room/1")).track("chat").subscribe({});
      const received: number[] = [];
      const reading = (async () => {
        for (;;) {
          const g = await sub.recvGroup();
          if (!g) return;
          await g.readFrame();
          received.push(g.sequence);
        }
      })();

      const acked = new Map<string, string>(); // payload -> group
      const statuses = new Map<number, number>();
      let replayMismatches = 0;
      let posting = true;
      const postOnce = async (f: number, key: string, body: string) => {
        const res = await fetch(`${funnels[f % 2]!.base}/tracks/${TRACK}`, {
          method: "POST",
          body,
          headers: { "idempotency-key": key, "content-type": "application/json" },
        });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        return res.status === 201 ? ((await res.json()) as { group: string }).group : undefined;
      };
      const poster = async (w: number) => {
        for (let i = 0; posting; i++) {
          const key = `p${w}-${i}`;
          const body = JSON.stringify(key);
          let group: string | undefined;
          for (let attempt = 0; group === undefined; attempt++) {
            group = await postOnce(w + i + attempt, key, body).catch(() => undefined);
            if (group === undefined) await sleep(50);
          }
          acked.set(body, group);
          if (i % 10 === 0) {
            // The same key through the other funnel: the same record answers.
            const again = await postOnce(w + i + 1, key, body).catch(() => undefined);
            if (again !== undefined && again !== group) replayMismatches++;
          }
          await sleep(PAUSE_MS);
        }
      };
      const posters = Array.from({ length: POSTERS }, (_, w) => poster(w));
      await until(() => received.length >= 20, "the first records at the subscriber");
      const first = Math.min(...received);
      for (const victim of [0, 1]) {
        await sleep(1500);
        await funnels[victim]!.kill();
        await sleep(1500);
        funnels[victim] = await startFunnelProcess(ledger, relay, files);
      }
      await sleep(1500);
      posting = false;
      await Promise.all(posters);

      const [a, b] = await Promise.all(funnels.map((f) => fullHistory(f.base, TRACK)));
      assert.deepEqual(a, b, "both funnels show the same history");
      a!.forEach((record, seq) => {
        assert.equal(parseGroupId(record.group).seq, seq, "consecutive groups, no gap");
      });
      const payloads = a!.map((r) => JSON.stringify(r.payload));
      assert.equal(new Set(payloads).size, payloads.length, "no Idempotency-Key stored twice");
      const at = new Map(a!.map((r) => [JSON.stringify(r.payload), r.group]));
      for (const [payload, group] of acked) {
        assert.equal(at.get(payload), group, `acknowledged ${payload} is in history at ${group}`);
      }
      assert.equal(replayMismatches, 0, "a key sent to both funnels answered one group");

      const wanted = [...acked.values()].map((g) => parseGroupId(g).seq + 1).filter((s) =>
        s >= first
      );
      const missing = () => wanted.filter((s) => !received.includes(s));
      await until(() => missing().length === 0, "every acknowledged record at the subscriber")
        .catch(() => {});
      const dups = received.length - new Set(received).size;
      console.log(
        `active-active: ${acked.size} acknowledged, answers ${
          JSON.stringify(Object.fromEntries(statuses))
        }, ${wanted.length} expected live from ${first}, ${missing().length} missing, ${dups} duplicated`,
      );
      assert.deepEqual(missing(), [], "acknowledged records that never reached the subscriber");
      assert.equal(dups, 0, "no record reached the subscriber twice");
      assert.equal(statuses.get(503) ?? 0, 0, "no 503 from a healthy database");

      // The funnels' own metrics: each learned the other's records, and counted its answers.
      let learned = 0;
      for (const f of funnels) {
        const fams = families(await (await fetch(`${f.base}/metrics`)).text());
        learned += sampleValue(fams, "sluice_funnel_records_learned_total") ?? 0;
        assert.ok(
          (sampleValue(fams, "sluice_funnel_http_requests_total", {
            route: "post",
            status: "201",
          }) ?? 0) > 0,
        );
      }
      assert.ok(learned > 0, "records committed by one funnel were published by the other");
      sub.close();
      await reading.catch(() => {});
    } catch (e) {
      for (const f of funnels) console.error(`--- funnel\n${f.process.lines.join("\n")}`);
      throw e;
    } finally {
      net?.close();
      for (const f of funnels) await f.kill();
      await relay?.stop();
      await Deno.remove(files.dir, { recursive: true });
      await dropTable(pgUrl!, table);
    }
  },
});
