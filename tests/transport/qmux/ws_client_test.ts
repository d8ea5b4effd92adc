/**
 * sluice's WebSocket client against real servers: Deno's (messages both
 * ways, a refusal's status over wss://) and a scripted raw one (fragmented
 * messages, pings, a bad accept key, masked server frames).
 */
import assert from "node:assert/strict";
import { QMuxConnectError } from "../../../src/transport/qmux/errors.ts";
import { openWebSocket } from "../../../src/transport/qmux/ws_client.ts";
import { concatBytes } from "../../../src/wire/mod.ts";
import { testCertificate } from "../../support/certs.ts";

const enc = new TextEncoder();

Deno.test("over wss:// with Deno's server: binary both ways, close code back, refusal status", async () => {
  const c = await testCertificate();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: c.certPem,
    key: c.keyPem,
    onListen: () => {},
  }, (req) => {
    if (new URL(req.url).pathname === "/no") {
      return Response.json({ detail: "The session URL carries no jwt query parameter" }, {
        status: 401,
      });
    }
    const { socket, response } = Deno.upgradeWebSocket(req, { protocol: "b" });
    socket.binaryType = "arraybuffer";
    socket.onmessage = (e) => {
      const got = new Uint8Array(e.data as ArrayBuffer);
      if (got[0] === 0) socket.close(4001, "asked to");
      else socket.send(concatBytes([got, got]));
    };
    return response;
  });
  const base = `wss://localhost:${server.addr.port}`;
  const { socket, protocol } = await openWebSocket(new URL(`${base}/yes`), {
    protocols: ["a", "b"],
    caCerts: [c.certPem],
  });
  assert.equal(protocol, "b");
  const messages: Uint8Array[] = [];
  const closed = Promise.withResolvers<{ code: number; reason: string }>();
  socket.listen({
    open: () => {},
    message: (m) => messages.push(m as Uint8Array),
    close: (code, reason) => closed.resolve({ code, reason }),
  });
  const big = new Uint8Array(200_000).map((_, i) => i + 1); // first byte not 0: 0 asks to close
  socket.send(big);
  socket.send(new Uint8Array([0]));
  assert.deepEqual(await closed.promise, { code: 4001, reason: "asked to" });
  assert.equal(messages.length, 1);
  assert.deepEqual(messages[0], concatBytes([big, big]));

  await assert.rejects(
    openWebSocket(new URL(`${base}/no`), { protocols: ["b"], caCerts: [c.certPem] }),
    (e: unknown) =>
      e instanceof QMuxConnectError && e.status === 401 && /carries no jwt/.test(e.message),
  );
  await server.shutdown();
});

/** A one-connection raw server: answers the handshake (with `accept` given the key), then `script`. */
function rawServer(
  script: (conn: Deno.Conn) => Promise<void>,
  accept?: (key: string) => Promise<string>,
): { url: URL; done: Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const done = (async () => {
    const conn = await listener.accept();
    listener.close();
    const buf = new Uint8Array(4096);
    const n = (await conn.read(buf)) ?? 0;
    const key = /Sec-WebSocket-Key: (\S+)/i.exec(new TextDecoder().decode(buf.subarray(0, n)))![1]!;
    const digest = await crypto.subtle.digest(
      "SHA-1",
      enc.encode(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"),
    );
    const good = btoa(String.fromCharCode(...new Uint8Array(digest)));
    await conn.write(enc.encode(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        `Sec-WebSocket-Accept: ${accept ? await accept(key) : good}\r\n` +
        "Sec-WebSocket-Protocol: p\r\n\r\n",
    ));
    await script(conn);
  })();
  return { url: new URL(`ws://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`), done };
}

const frame = (b0: number, payload: number[], masked = false) =>
  new Uint8Array([
    b0,
    (masked ? 0x80 : 0) | payload.length,
    ...(masked ? [0, 0, 0, 0] : []),
    ...payload,
  ]);

Deno.test("fragmented messages are reassembled and pings answered", async () => {
  let pong: Uint8Array | undefined;
  const srv = rawServer(async (conn) => {
    // A binary message in three fragments with a ping in between.
    await conn.write(concatBytes([
      frame(0x02, [1, 2]),
      frame(0x89, [7, 7]),
      frame(0x00, [3]),
      frame(0x80, [4, 5]),
    ]));
    const buf = new Uint8Array(64);
    const n = (await conn.read(buf)) ?? 0;
    pong = buf.subarray(0, n);
    await conn.write(frame(0x88, [0x03, 0xe8])); // close 1000
    conn.close();
  });
  const { socket } = await openWebSocket(srv.url, { protocols: ["p"] });
  const got: Uint8Array[] = [];
  const closed = Promise.withResolvers<number>();
  socket.listen({
    open: () => {},
    message: (m) => got.push(m as Uint8Array),
    close: (code) => closed.resolve(code),
  });
  assert.equal(await closed.promise, 1000);
  await srv.done;
  assert.deepEqual(got, [new Uint8Array([1, 2, 3, 4, 5])]);
  // The pong: FIN|0xA, masked, length 2, mask key, masked payload that unmasks to 7 7.
  assert.equal(pong![0], 0x8a);
  assert.equal(pong![1], 0x82);
  const mask = pong!.subarray(2, 6);
  assert.deepEqual([pong![6]! ^ mask[0]!, pong![7]! ^ mask[1]!], [7, 7]);
});

Deno.test("a server frame that is masked fails the connection with 1002", async () => {
  const srv = rawServer(async (conn) => {
    await conn.write(frame(0x82, [1], true));
    await conn.read(new Uint8Array(64)).catch(() => null);
    conn.close();
  });
  const { socket } = await openWebSocket(srv.url, { protocols: ["p"] });
  const closed = Promise.withResolvers<number>();
  socket.listen({ open: () => {}, message: () => {}, close: (code) => closed.resolve(code) });
  assert.equal(await closed.promise, 1002);
  await srv.done;
});

Deno.test("a wrong Sec-WebSocket-Accept is refused", async () => {
  const srv = rawServer((conn) => Promise.resolve(conn.close()), () => Promise.resolve("bogus"));
  await assert.rejects(
    openWebSocket(srv.url, { protocols: ["p"] }),
    (e: unknown) => e instanceof QMuxConnectError && /Accept does not match/.test(e.message),
  );
  await srv.done;
});
