// A stream append's body is read as it arrives: a chunked body past the 16 MiB
// cap is refused while the sender is still sending (the funnel never holds
// more than the cap, whatever it is sent), and one that trickles is refused at
// the body deadline, as POST /tracks/ is. Both at the shipped defaults.
import assert from "node:assert/strict";
import { testCertificateFiles } from "../support/certs.ts";
import { quiet } from "../support/quiet.ts";
import { startLiveFunnel } from "../support/live_funnel.ts";
import { residentMiB, spawnServer } from "../support/processes.ts";
import { within } from "../support/wait.ts";

const encoder = new TextEncoder();
const MiB = 1 << 20;

/** Reads the server's answer head (and whatever body came with it) until the connection closes or a head is in. */
async function readHead(conn: Deno.Conn): Promise<string> {
  const buf = new Uint8Array(4096);
  let text = "";
  for (;;) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return text;
    text += new TextDecoder().decode(buf.subarray(0, n));
    if (text.includes("\r\n\r\n")) return text;
  }
}

Deno.test({
  name:
    "A chunked 600 MB stream append is refused with 413 before 32 MiB are sent, and the funnel's memory stays bounded",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const { dir, cert, key } = await testCertificateFiles();
    const p = spawnServer("funnel", {
      env: {
        FUNNEL_ADDR: "127.0.0.1:0",
        FUNNEL_SERVE_ADDR: "127.0.0.1:0",
        CERT_FILE: cert,
        KEY_FILE: key,
      },
      cwd: dir,
    });
    try {
      await p.ready();
      const port = Number(/^Ingest: http:\/\/\S+:(\d+)/m.exec(p.lines.join("\n"))![1]);
      const put = await fetch(`http://127.0.0.1:${port}/v1/stream/big`, {
        method: "PUT",
        headers: { "content-type": "application/octet-stream" },
      });
      assert.equal(put.status, 201);
      await put.body?.cancel();
      const before = residentMiB(p.pid);

      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      await conn.write(encoder.encode(
        "POST /v1/stream/big HTTP/1.1\r\nhost: x\r\ncontent-type: application/octet-stream\r\n" +
          "transfer-encoding: chunked\r\n\r\n",
      ));
      let answered = false;
      const answer = readHead(conn).finally(() => answered = true);
      const chunk = new Uint8Array(MiB).fill(0x61);
      const framed = [encoder.encode(`${MiB.toString(16)}\r\n`), chunk, encoder.encode("\r\n")];
      let sent = 0;
      let peak = before;
      try {
        while (!answered && sent < 600 * MiB) {
          for (const part of framed) {
            for (let at = 0; at < part.length;) at += await conn.write(part.subarray(at));
          }
          sent += MiB;
          if (sent % (8 * MiB) === 0) peak = Math.max(peak, residentMiB(p.pid));
        }
        // All of it sent unanswered: end the body, so the answer comes once it was read.
        if (!answered) await conn.write(encoder.encode("0\r\n\r\n"));
      } catch {
        // The funnel closed the connection after refusing: what was written is counted.
      }
      const head = await answer;
      peak = Math.max(peak, residentMiB(p.pid));
      conn.close();
      console.log(
        `sent ${sent / MiB} MiB before the answer; funnel RSS ${before.toFixed(0)} MiB before, ` +
          `${peak.toFixed(0)} MiB at most`,
      );
      assert.match(head, /^HTTP\/1\.1 413 /, head);
      assert.match(head, /connection: close/i);
      // The cap is 16 MiB; what the sender got into the socket beyond it sat in kernel buffers.
      assert.ok(sent < 32 * MiB, `the sender sent ${sent / MiB} MiB before the 413`);
      assert.ok(peak - before < 128, `the funnel grew from ${before} to ${peak} MiB`);
    } finally {
      await p.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("A stream append whose body trickles is answered 408 at the default 10 s body deadline", async () => {
  using _q = quiet();
  await using f = await startLiveFunnel();
  const put = await fetch(`${f.base}/v1/stream/slow`, {
    method: "PUT",
    headers: { "content-type": "text/plain" },
  });
  assert.equal(put.status, 201);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: f.funnel.addr.port });
  await conn.write(encoder.encode(
    "POST /v1/stream/slow HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\n" +
      "transfer-encoding: chunked\r\n\r\n1\r\na\r\n",
  ));
  // One byte a second: never done within the deadline.
  let writing = true;
  const trickle = (async () => {
    while (writing) {
      await new Promise((r) => setTimeout(r, 1000));
      try {
        await conn.write(encoder.encode("1\r\na\r\n"));
      } catch {
        return;
      }
    }
  })();
  const head = await within(readHead(conn), 30_000, "an answer to the trickled append");
  writing = false;
  await trickle;
  conn.close();
  assert.match(head, /^HTTP\/1\.1 408 /, head);
  assert.match(head, /did not arrive within 10 s/);
  const read = await fetch(`${f.base}/v1/stream/slow?offset=-1`);
  assert.equal(await read.text(), "", "nothing was appended");
});
