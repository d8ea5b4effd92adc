// `FUNNEL_ADDR=:port` and `FUNNEL_SERVE_ADDR=:port` (the shipped defaults' form) listen on every
// interface of both families: a funnel started with `:0` takes records over HTTP and serves them
// over native QUIC, WebTransport and WebSocket on 127.0.0.1 and on ::1 alike, and its summary
// prints the bound addresses, an IPv6 one in brackets. The shipped defaults are `:8090` and
// `:4433`; this funnel takes `:0` so that tests running side by side do not collide.
import assert from "node:assert/strict";
import { QMUX_DRAFTS } from "../../src/transport/mod.ts";
import { probeEveryInterface } from "../../src/transport/mod.ts";
import { testCertificateFiles } from "../support/certs.ts";
import { take } from "../support/live_funnel.ts";
import { dialOurs } from "../support/moq.ts";
import { spawnServer } from "../support/processes.ts";
import { ipv6LoopbackMissing } from "../support/requires.ts";

/** Over each transport at `host`, a subscriber gets the record POSTed at `host`. */
async function assertServes(host: string, ingest: number, serve: number): Promise<void> {
  const track = `http://${host}:${ingest}/tracks/at/${host.replace(/\W/g, "")}/feed`;
  const put = await fetch(track, { method: "PUT" });
  assert.equal(put.status, 201, `PUT at ${host}`);
  await put.body?.cancel();
  const sessions = await Promise.all(
    [{}, { webTransport: true }, { webSocket: [QMUX_DRAFTS[0]!] }].map((how) =>
      dialOurs(serve, { host, ...how })
    ),
  );
  try {
    const path = `at/${host.replace(/\W/g, "")}`;
    const subs = sessions.map((moq) => moq.subscribe(path, "feed"));
    await Promise.all(subs.map((s) => s.ready));
    const posted = await fetch(track, { method: "POST", body: '{"hi":1}' });
    assert.equal(posted.status, 201, `POST at ${host}`);
    await posted.body?.cancel();
    for (const sub of subs) {
      assert.deepEqual(await take(sub, 1), [{ seq: 1, frame: '{"payload":{"hi":1}}' }]);
    }
  } finally {
    for (const moq of sessions) moq.close(0, "");
  }
}

Deno.test("sluice funnel with FUNNEL_ADDR=:0 and FUNNEL_SERVE_ADDR=:0 takes records and serves them on 127.0.0.1 and [::1]", async (t) => {
  const { dir, cert, key } = await testCertificateFiles();
  const p = spawnServer("funnel", {
    env: { FUNNEL_ADDR: ":0", FUNNEL_SERVE_ADDR: ":0", CERT_FILE: cert, KEY_FILE: key },
    cwd: dir,
  });
  try {
    // Auth off on every interface is an explicit opt-in, and the summary ends with what it exposes.
    const warning =
      /^WARNING: SLUICE_AUTH_KEYS is not set and FUNNEL_ADDR=:0, FUNNEL_SERVE_ADDR=:0 reaches beyond/;
    await p.waitForLine(warning);
    const summary = p.lines.join("\n");
    const ingest = /^Ingest: http:\/\/(\S+):(\d+)/m.exec(summary);
    const serve = /^Serve: moqt:\/\/(\S+):(\d+) /m.exec(summary);
    assert.ok(ingest && serve, summary);
    const expected = probeEveryInterface();
    await t.step("on 127.0.0.1", () => assertServes("127.0.0.1", +ingest[2]!, +serve[2]!));
    await t.step({
      name: "on [::1]",
      ignore: ipv6LoopbackMissing() !== undefined || expected.ipv4Only !== undefined,
      fn: () => assertServes("[::1]", +ingest[2]!, +serve[2]!),
    });
    // The bound addresses, an IPv6 one in brackets; where `::` cannot take IPv4 too on this host,
    // 0.0.0.0 and the reason.
    const host = expected.hostname === "::" ? "[::]" : "0.0.0.0";
    assert.equal(ingest[1], host, summary);
    assert.equal(serve[1], host, summary);
    assert.equal(summary.includes("IPv4 only: "), expected.ipv4Only !== undefined, summary);
  } finally {
    const status = await p.stop();
    await Deno.remove(dir, { recursive: true });
    assert.equal(status.code, 0, p.lines.join("\n"));
  }
});
