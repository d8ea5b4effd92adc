// A `sluice funnel` process (shipped permissions) over a real PostgreSQL reached through
// a TCP proxy: connections cut while transactions of the funnel are open must never end
// the process. POSTs during the cut are answered 503, later ones 201, and every record
// answered 201 is in history exactly once at the group it was acknowledged as.
import assert from "node:assert/strict";
import postgres from "postgres";
import { sleep } from "../../src/timers/mod.ts";
import { testCertificateFiles } from "../support/certs.ts";
import {
  dropTable,
  findPostgres,
  freshTableName,
  postgresMissing,
  proxiedPostgres,
} from "../support/postgres.ts";
import { ignoreWithout } from "../support/requires.ts";
import { shippedFlags } from "../support/shipped_flags.ts";
import { until, within } from "../support/wait.ts";
import { fullHistory, type FunnelProcess, startFunnelProcess } from "./_replicas.ts";

const pgUrl = await findPostgres();

async function post(
  funnel: FunnelProcess,
  track: string,
  payload: string,
  key: string,
): Promise<{ status: number; group?: string }> {
  let r: Response;
  try {
    r = await fetch(`${funnel.base}/tracks/${track}`, {
      method: "POST",
      body: JSON.stringify(payload),
      headers: { "content-type": "application/json", "idempotency-key": key },
    });
  } catch (error) {
    const status = await within(funnel.process.child.status, 2_000, "the funnel's exit")
      .catch(() => "still running");
    throw new Error(
      `POST ${payload} got no answer (the funnel: ${JSON.stringify(status)}):\n${
        funnel.process.lines.slice(-20).join("\n")
      }`,
      { cause: error },
    );
  }
  const body = await r.text();
  return r.status === 201
    ? { status: 201, group: (JSON.parse(body) as { group: string }).group }
    : { status: r.status };
}

Deno.test({
  name: "a funnel process survives PostgreSQL connections cut inside its open transactions",
  ignore: ignoreWithout("PostgreSQL", postgresMissing(pgUrl)),
  async fn() {
    const { proxy, url: ledger } = proxiedPostgres(pgUrl!);
    const table = freshTableName();
    ledger.searchParams.set("table", table);
    const files = await testCertificateFiles();
    const funnel = await startFunnelProcess(ledger.href, undefined, files, {
      FUNNEL_SERVE_ADDR: "none",
    }, shippedFlags("funnel"));
    let exit: Deno.CommandStatus | undefined;
    funnel.process.child.status.then((s) => (exit = s));
    const direct = postgres(pgUrl!, { max: 1, onnotice: () => {} });
    const track = "cut/room/chat";
    const acked = new Map<string, string>(); // group → payload
    const release = Promise.withResolvers<void>();
    let holder: Promise<unknown> = Promise.resolve();
    try {
      const first = await post(funnel, track, "first", "k0");
      assert.equal(first.status, 201);
      acked.set(first.group!, "first");
      // Holds the track's row lock, so the funnel's keyed commits wait inside their
      // transactions (after BEGIN) for as long as the test wants.
      const locked = Promise.withResolvers<void>();
      holder = direct.begin(async (tx) => {
        await tx`select 1 from ${tx(table)} where seq = -1 for update`;
        locked.resolve();
        await release.promise;
      });
      await locked.promise;
      const waiting = [1, 2, 3].map((i) => post(funnel, track, `held ${i}`, `k${i}`));
      await sleep(500);
      proxy.cut();
      // Each held POST's transaction lost its connection: an answer, not acknowledged.
      for (const answer of await Promise.all(waiting)) assert.equal(answer.status, 503);
      assert.equal((await post(funnel, track, "during", "k4")).status, 503);
      await sleep(500);
      release.resolve();
      await holder;
      assert.equal(
        exit,
        undefined,
        `the funnel ended (${JSON.stringify(exit)}):\n${
          funnel.process.lines.slice(-20).join("\n")
        }`,
      );
      proxy.restore();
      let after: { status: number; group?: string } = { status: 0 };
      await until(async () => {
        after = await post(funnel, track, "after", "k5");
        return after.status === 201;
      }, "a POST after the cut to be acknowledged");
      acked.set(after.group!, "after");
      const history = await fullHistory(funnel.base, track);
      const groups = history.map((r) => r.group);
      assert.equal(new Set(groups).size, groups.length, `a group twice: ${groups}`);
      const stored = new Map(history.map((r) => [r.group, r.payload]));
      for (const [group, payload] of acked) assert.equal(stored.get(group), payload, group);
      assert.equal(exit, undefined, "the funnel is still running");
    } finally {
      release.resolve();
      await holder.catch(() => {});
      await funnel.kill();
      await direct.end({ timeout: 1 });
      await proxy.close();
      await Deno.remove(files.dir, { recursive: true });
      await dropTable(pgUrl!, table);
    }
  },
});
