/** The moq layer on sluice's own WebTransport sessions (combined listener), both versions. */
import assert from "node:assert/strict";
import { accept, connect, type MoqSession, TrackProducer, VERSIONS } from "../../../src/moq/mod.ts";
import { listen } from "../../../src/transport/mod.ts";
import { connectWebTransport } from "../../../src/transport/mod.ts";
import { testCertificate } from "../../support/certs.ts";

for (const version of ["moq-lite-05", "moq-lite-04"]) {
  Deno.test(`${version} over WebTransport: url from CONNECT, subscribe and announce`, async () => {
    const cert = await testCertificate();
    const track = new TrackProducer();
    let resolveServer!: (m: MoqSession) => void;
    const serverP = new Promise<MoqSession>((r) => resolveServer = r);
    const server = await listen({
      protocols: VERSIONS,
      certPem: cert.certPem,
      keyPem: cert.keyPem,
      onSession: (s) => {
        accept(s, { serve: (r) => r.path === "demo" ? track : "not_found" }).then(resolveServer);
      },
    });
    const session = await connectWebTransport(
      new URL(`https://127.0.0.1:${server.addr.port}/moq?jwt=abc`),
      { serverCertificateHashes: [cert.sha256], protocols: [version] },
    );
    assert.equal(session.transport, "webtransport");
    const client = await connect(session);
    const moq = await serverP;
    assert.equal(moq.version, version);
    assert.equal(moq.url?.searchParams.get("jwt"), "abc");
    moq.announce("demo");
    const ac = new AbortController();
    for await (const e of client.announced("", { signal: ac.signal })) {
      assert.equal(e.path, "demo");
      ac.abort();
    }
    track.writeGroup(1, new TextEncoder().encode("one"));
    const got: number[] = [];
    for await (const g of client.subscribe("demo", "t")) {
      got.push(g.sequence);
      if (g.sequence < 200) track.writeGroup(g.sequence + 1, g.frames);
      else break;
    }
    assert.equal(got.length, 200);
    client.close(0, "");
    await moq.closed;
    await server.stop();
  });
}
