// Slow and idle HTTP clients: a body that trickles past its deadline is
// answered 408 and its connection closed; idle keep-alive connections and
// half-sent headers do not stop the funnel answering everyone else.
import assert from "node:assert/strict";
import { call, startTestFunnel } from "./_http.ts";
import { BODY_TIMEOUT_MS } from "../../src/http/mod.ts";

const encoder = new TextEncoder();

/** Reads the server's answer: up to the end of its head and `content-length` body. */
async function readAnswer(conn: Deno.Conn): Promise<string> {
  const buf = new Uint8Array(4096);
  let text = "";
  for (;;) {
    const n = await conn.read(buf);
    if (n === null) return text;
    text += new TextDecoder().decode(buf.subarray(0, n));
    const head = text.indexOf("\r\n\r\n");
    const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? NaN);
    if (head >= 0 && text.length >= head + 4 + length) return text;
  }
}

// Trickles a POST body one byte every 100 ms with each framing: answered 408 at the deadline
// (`bodyTimeoutMs`, the shipped BODY_TIMEOUT_MS when undefined), connection closed, nothing kept.
async function trickledPastDeadline(bodyTimeoutMs: number | undefined, framings: string[]) {
  await using t = await startTestFunnel({}, bodyTimeoutMs === undefined ? {} : { bodyTimeoutMs });
  const deadlineMs = bodyTimeoutMs ?? BODY_TIMEOUT_MS;
  for (const framing of framings) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: t.funnel.addr.port });
    const chunked = framing.startsWith("transfer");
    await conn.write(encoder.encode(
      `POST /tracks/room/1/chat HTTP/1.1\r\nhost: x\r\n${framing}\r\n\r\n${
        chunked ? "1\r\n{\r\n" : "{"
      }`,
    ));
    // One more byte every 100 ms: never enough to finish within the deadline.
    let writing = true;
    const trickle = (async () => {
      while (writing) {
        await new Promise((r) => setTimeout(r, 100));
        try {
          await conn.write(encoder.encode(chunked ? "1\r\n \r\n" : " "));
        } catch {
          return; // the server closed the connection
        }
      }
    })();
    const started = performance.now();
    const text = await readAnswer(conn);
    writing = false;
    await trickle;
    const elapsed = performance.now() - started;
    assert.match(text, /^HTTP\/1\.1 408 /, framing);
    assert.ok(text.includes(`did not arrive within ${deadlineMs / 1000} s`), text);
    assert.match(text, /connection: close/i);
    assert.ok(elapsed >= deadlineMs - 50, `${framing}: not before the deadline (${elapsed} ms)`);
    assert.ok(elapsed < deadlineMs + 3000, `${framing}: answered after ${elapsed} ms`);
    conn.close();
  }
  // Nothing was committed by the timed-out requests.
  const history = await call(t.base, "GET", "/tracks/room/1/chat");
  assert.equal(history.status, 404);
}

// A body deadline of 300 ms (shipped BODY_TIMEOUT_MS, 10 s), so the trickle outlasts it quickly
// with both framings; the twin below keeps the promise at the shipped deadline.
Deno.test("a body trickled past the deadline is answered 408 at the deadline and commits nothing", async () => {
  await trickledPastDeadline(300, ["content-length: 40", "transfer-encoding: chunked"]);
});

Deno.test("a body trickled past the shipped deadline (BODY_TIMEOUT_MS) is answered 408 and commits nothing", async () => {
  await trickledPastDeadline(undefined, ["transfer-encoding: chunked"]);
});

Deno.test("idle keep-alive and half-sent requests do not stop the funnel answering others", async () => {
  await using t = await startTestFunnel();
  const port = t.funnel.addr.port;
  const conns: Deno.Conn[] = [];
  try {
    // 400 keep-alive connections that made one request and went quiet...
    for (let i = 0; i < 400; i++) {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      await c.write(encoder.encode("GET /health HTTP/1.1\r\nhost: x\r\n\r\n"));
      conns.push(c);
    }
    const buf = new Uint8Array(1024);
    await Promise.all(conns.map((c) => c.read(buf.slice())));
    // ...and 200 that sent half a request line or half their headers and stopped.
    for (let i = 0; i < 200; i++) {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      await c.write(
        encoder.encode(i % 2 ? "POST /tracks/room/1/ch" : "GET / HTTP/1.1\r\nhost: x\r\nx-slow:"),
      );
      conns.push(c);
    }
    // Everyone else is still served: posts commit in order, history reads them back.
    for (let i = 0; i < 20; i++) {
      const reply = await call(t.base, "POST", "/tracks/room/1/chat", {
        body: JSON.stringify({ i }),
      });
      assert.equal(reply.status, 201);
    }
    const history = await call(t.base, "GET", "/tracks/room/1/chat?limit=50");
    assert.equal(history.status, 200);
    assert.deepEqual(
      history.json.records.map((r: { payload: { i: number } }) => r.payload.i),
      Array.from({ length: 20 }, (_, i) => i),
    );
  } finally {
    for (const c of conns) c.close();
  }
});
