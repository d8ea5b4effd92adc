import assert from "node:assert/strict";
import { certificateSha256, generateDevCertificate, runCertsCommand } from "../../src/certs/mod.ts";

Deno.test("dev certificate is accepted by Deno QUIC through serverCertificateHashes", async () => {
  const cert = await generateDevCertificate();
  assert.deepEqual(await certificateSha256(cert.certPem), cert.sha256);
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  const listener = endpoint.listen({
    cert: cert.certPem,
    key: cert.keyPem,
    alpnProtocols: ["test"],
  });
  const accepted = (async () => {
    const incoming = await listener.incoming();
    const conn = await incoming.accept();
    const uni = await conn.incomingUnidirectionalStreams.getReader().read();
    const text = await new Response(uni.value).text();
    conn.close({ closeCode: 0, reason: "" });
    return text;
  })();
  // Deno 2.9 honours serverCertificateHashes at runtime but its types omit it.
  const options: Deno.ConnectQuicOptions<false> & {
    serverCertificateHashes: { algorithm: string; value: Uint8Array }[];
  } = {
    hostname: "127.0.0.1",
    port: endpoint.addr.port,
    alpnProtocols: ["test"],
    serverName: "localhost",
    serverCertificateHashes: [{ algorithm: "sha-256", value: cert.sha256 }],
  };
  const client = await Deno.connectQuic(options);
  const w = (await client.createUnidirectionalStream()).getWriter();
  await w.write(new TextEncoder().encode("hello"));
  await w.close();
  assert.equal(await accepted, "hello");
  await client.closed.catch(() => {});
  endpoint.close();
});

Deno.test("dev certificate is accepted by Deno QUIC as a CA file for 127.0.0.1", async () => {
  const cert = await generateDevCertificate({ hosts: ["127.0.0.1"], days: 1 });
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  const listener = endpoint.listen({ cert: cert.certPem, key: cert.keyPem, alpnProtocols: ["t"] });
  const accepted = (async () => {
    const conn = await (await listener.incoming()).accept();
    conn.close({ closeCode: 7, reason: "bye" });
  })();
  const client = await Deno.connectQuic({
    hostname: "127.0.0.1",
    port: endpoint.addr.port,
    alpnProtocols: ["t"],
    caCerts: [cert.certPem],
  });
  await accepted;
  const info = await client.closed;
  assert.equal(info.closeCode, 7);
  endpoint.close();
});

Deno.test("dev certificate refuses validity over 14 days and an empty host list", async () => {
  await assert.rejects(generateDevCertificate({ days: 15 }), RangeError);
  await assert.rejects(generateDevCertificate({ hosts: [] }), RangeError);
});

Deno.test("certs command writes files, refuses to overwrite, prints the hash", async () => {
  const dir = await Deno.makeTempDir();
  const log = console.log;
  const err = console.error;
  const lines: string[] = [];
  console.log = (...a: unknown[]) => lines.push(a.join(" "));
  console.error = (...a: unknown[]) => lines.push(a.join(" "));
  try {
    assert.equal(await runCertsCommand(["--out-dir", dir]), 0);
    const pem = await Deno.readTextFile(`${dir}/server.crt`);
    const hex = Array.from(await certificateSha256(pem), (b) => b.toString(16).padStart(2, "0"))
      .join("");
    assert.ok(lines.some((l) => l.includes(hex)), "prints the certificate hash");
    assert.match(await Deno.readTextFile(`${dir}/server.key`), /BEGIN PRIVATE KEY/);
    assert.equal(await runCertsCommand(["--out-dir", dir]), 1);
    assert.equal(await Deno.readTextFile(`${dir}/server.crt`), pem, "left untouched");
    assert.equal(await runCertsCommand(["--out-dir", dir, "--force"]), 0);
    assert.notEqual(await Deno.readTextFile(`${dir}/server.crt`), pem);
    assert.equal(await runCertsCommand(["--bogus"]), 2);
  } finally {
    console.log = log;
    console.error = err;
    await Deno.remove(dir, { recursive: true });
  }
});
