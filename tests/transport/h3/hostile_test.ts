import assert from "node:assert/strict";
import { connectWebTransport, H3Code } from "../../../src/transport/webtransport/mod.ts";
import { encodeFrame } from "../../../src/transport/h3/frame.ts";
import { readHeaders } from "../../../src/transport/h3/headers.ts";
import { encodeFieldSection, type HeaderField } from "../../../src/transport/h3/qpack.ts";
import { encodeSettings } from "../../../src/transport/h3/settings.ts";
import { concatBytes, encodeVarint, StreamReader } from "../../../src/wire/mod.ts";
import { readText, startServer, type TestServer, writeText } from "../_server.ts";
import { VERSIONS } from "../../../src/moq/mod.ts";

// A raw HTTP/3 peer that writes hand-made bytes, to check how the server treats hostile input.

const SETTINGS = encodeFrame(0x04, encodeSettings([[0x33n, 1n], [0x2b603742n, 1n]]));
const CONTROL = concatBytes([encodeVarint(0x00), SETTINGS]);

function connectRequest(t: TestServer, path: string, extra: HeaderField[] = []): Uint8Array {
  return encodeFrame(
    0x01,
    encodeFieldSection([
      [":method", "CONNECT"],
      [":protocol", "webtransport"],
      [":scheme", "https"],
      [":authority", `localhost:${t.port}`],
      [":path", path],
      ["wt-available-protocols", '"moq-lite-05"'],
      ...extra,
    ]),
  );
}

async function rawConn(t: TestServer): Promise<Deno.QuicConn> {
  const options: Deno.ConnectQuicOptions<false> & {
    serverCertificateHashes: { algorithm: string; value: Uint8Array }[];
  } = {
    hostname: "127.0.0.1",
    port: t.port,
    alpnProtocols: ["h3"],
    serverCertificateHashes: [{ algorithm: "sha-256", value: t.cert.sha256 }],
  };
  return await Deno.connectQuic(options);
}

async function send(
  stream: WritableStream<Uint8Array>,
  bytes: Uint8Array,
  fin = false,
): Promise<void> {
  const w = stream.getWriter();
  await w.write(bytes);
  if (fin) await w.close();
  else w.releaseLock();
}

async function uni(conn: Deno.QuicConn, bytes: Uint8Array, fin = false): Promise<void> {
  await send(await conn.createUnidirectionalStream(), bytes, fin);
}

/** Waits for the server to close the connection and returns its HTTP/3 code. */
async function closedWith(conn: Deno.QuicConn): Promise<number> {
  const info = await conn.closed.catch(() => ({ closeCode: -1, reason: "" }));
  return info.closeCode;
}

/** Sends one CONNECT and returns the response status. */
async function requestStatus(conn: Deno.QuicConn, bytes: Uint8Array): Promise<number> {
  const s = await conn.createBidirectionalStream();
  await send(s.writable, bytes);
  const r = new StreamReader(s.readable.getReader());
  const fields = await readHeaders(r, 16384);
  r.cancel();
  return Number(fields?.find((f) => f[0] === ":status")?.[1]);
}

async function expectClose(
  t: TestServer,
  code: number,
  act: (conn: Deno.QuicConn) => Promise<void>,
): Promise<void> {
  const conn = await rawConn(t);
  await act(conn).catch(() => {}); // the server may close while we still write
  assert.equal(
    (await closedWith(conn)).toString(16),
    code.toString(16),
    `expected HTTP/3 error 0x${code.toString(16)}`,
  );
}

Deno.test("hostile HTTP/3 input closes only the offending connection, with the right error", async (t) => {
  const server = await startServer({
    webTransportSessionTimeoutMs: 300,
    maxFieldSectionSize: 4096,
  });
  // A well-behaved session that must keep working throughout.
  const good = await connectWebTransport(server.url("/good"), {
    protocols: VERSIONS,
    serverCertificateHashes: [server.cert.sha256],
  });
  const goodServer = await server.sessions.next();
  try {
    await t.step("bad QPACK (dynamic table reference) → QPACK_DECOMPRESSION_FAILED", async () => {
      await expectClose(server, H3Code.QPACK_DECOMPRESSION_FAILED, async (conn) => {
        await uni(conn, CONTROL);
        const s = await conn.createBidirectionalStream();
        await send(s.writable, encodeFrame(0x01, Uint8Array.from([0x01, 0x00, 0xd9])));
      });
    });

    await t.step("Huffman string with bad padding → QPACK_DECOMPRESSION_FAILED", async () => {
      await expectClose(server, H3Code.QPACK_DECOMPRESSION_FAILED, async (conn) => {
        await uni(conn, CONTROL);
        const s = await conn.createBidirectionalStream();
        // :path (static name 1) with a 1-byte Huffman value 0x18 ("a" + zero padding)
        await send(s.writable, encodeFrame(0x01, Uint8Array.from([0, 0, 0x51, 0x81, 0x18])));
      });
    });

    await t.step("oversized headers get 431 and the connection stays usable", async () => {
      const conn = await rawConn(server);
      await uni(conn, CONTROL);
      const big = connectRequest(server, "/big", [["x-pad", "p".repeat(5000)]]);
      assert.equal(await requestStatus(conn, big), 431);
      assert.equal(await requestStatus(conn, connectRequest(server, "/after")), 200);
      conn.close({ closeCode: H3Code.NO_ERROR, reason: "" });
      const s = await server.sessions.next();
      assert.equal(s?.url?.pathname, "/after");
    });

    await t.step(
      "malformed or non-WebTransport requests get 4xx; the connection lives",
      async () => {
        const conn = await rawConn(server);
        await uni(conn, CONTROL);
        const get = encodeFrame(
          0x01,
          encodeFieldSection([[":method", "GET"], [":scheme", "https"], [":authority", "x"], [
            ":path",
            "/",
          ]]),
        );
        assert.equal(await requestStatus(conn, get), 405);
        const upper = connectRequest(server, "/x", [["X-Upper", "1"]]);
        assert.equal(await requestStatus(conn, upper), 400);
        const noProtocol = encodeFrame(
          0x01,
          encodeFieldSection([[":method", "CONNECT"], [":authority", `localhost:${server.port}`]]),
        );
        assert.equal(await requestStatus(conn, noProtocol), 400);
        const late = connectRequest(server, "/x", [[":late-pseudo", "1"]]);
        assert.equal(await requestStatus(conn, late), 400);
        assert.equal(await requestStatus(conn, connectRequest(server, "/fine")), 200);
        assert.equal((await server.sessions.next())?.url?.pathname, "/fine");
        conn.close({ closeCode: H3Code.NO_ERROR, reason: "" });
      },
    );

    await t.step("DATA on the control stream → H3_FRAME_UNEXPECTED", async () => {
      await expectClose(server, H3Code.FRAME_UNEXPECTED, async (conn) => {
        await uni(conn, concatBytes([CONTROL, encodeFrame(0x00, Uint8Array.of(1, 2))]));
      });
    });

    await t.step("SETTINGS on a request stream → H3_FRAME_UNEXPECTED", async () => {
      await expectClose(server, H3Code.FRAME_UNEXPECTED, async (conn) => {
        await uni(conn, CONTROL);
        const s = await conn.createBidirectionalStream();
        await send(s.writable, SETTINGS);
      });
    });

    await t.step("DATA before HEADERS on a request stream → H3_FRAME_UNEXPECTED", async () => {
      await expectClose(server, H3Code.FRAME_UNEXPECTED, async (conn) => {
        await uni(conn, CONTROL);
        const s = await conn.createBidirectionalStream();
        await send(s.writable, encodeFrame(0x00, Uint8Array.of(1)));
      });
    });

    await t.step("first control frame not SETTINGS → H3_MISSING_SETTINGS", async () => {
      await expectClose(server, H3Code.MISSING_SETTINGS, async (conn) => {
        await uni(conn, concatBytes([encodeVarint(0), encodeFrame(0x07, encodeVarint(0))]));
      });
    });

    await t.step("duplicate setting → H3_SETTINGS_ERROR", async () => {
      await expectClose(server, H3Code.SETTINGS_ERROR, async (conn) => {
        const dup = encodeFrame(0x04, encodeSettings([[0x33n, 1n], [0x33n, 1n]]));
        await uni(conn, concatBytes([encodeVarint(0), dup]));
      });
    });

    await t.step("HTTP/2-only setting → H3_SETTINGS_ERROR", async () => {
      await expectClose(server, H3Code.SETTINGS_ERROR, async (conn) => {
        const h2 = encodeFrame(0x04, encodeSettings([[0x02n, 0n]]));
        await uni(conn, concatBytes([encodeVarint(0), h2]));
      });
    });

    await t.step(
      "unknown and GREASE settings and frames are ignored (RFC 9114 §7.2.4)",
      async () => {
        const conn = await rawConn(server);
        const settings = encodeFrame(
          0x04,
          encodeSettings([[0x33n, 1n], [0x2b603742n, 1n], [0x1fn * 7n + 0x21n, 9n], [
            0xabcdefn,
            3n,
          ]]),
        );
        const grease = encodeFrame(0x1f * 3 + 0x21, Uint8Array.of(1, 2, 3));
        await uni(conn, concatBytes([encodeVarint(0), settings, grease]));
        const s = await conn.createBidirectionalStream();
        await send(s.writable, concatBytes([grease, connectRequest(server, "/grease")]));
        const r = new StreamReader(s.readable.getReader());
        assert.equal((await readHeaders(r, 16384))?.find((f) => f[0] === ":status")?.[1], "200");
        assert.equal((await server.sessions.next())?.url?.pathname, "/grease");
        r.cancel();
        conn.close({ closeCode: H3Code.NO_ERROR, reason: "" });
      },
    );

    await t.step("second control stream → H3_STREAM_CREATION_ERROR", async () => {
      await expectClose(server, H3Code.STREAM_CREATION_ERROR, async (conn) => {
        await uni(conn, CONTROL);
        await uni(conn, CONTROL);
      });
    });

    await t.step("control stream closed → H3_CLOSED_CRITICAL_STREAM", async () => {
      await expectClose(server, H3Code.CLOSED_CRITICAL_STREAM, async (conn) => {
        await uni(conn, CONTROL, true);
      });
    });

    await t.step(
      "QPACK insert with a zero-capacity table → QPACK_ENCODER_STREAM_ERROR",
      async () => {
        await expectClose(server, H3Code.QPACK_ENCODER_STREAM_ERROR, async (conn) => {
          await uni(conn, CONTROL);
          await uni(conn, Uint8Array.of(0x02, 0x3f, 0xe1, 0x1f)); // set capacity 4096
        });
      },
    );

    await t.step(
      "connection that never sends CONNECT times out (H3_REQUEST_INCOMPLETE)",
      async () => {
        await expectClose(server, H3Code.REQUEST_INCOMPLETE, async (conn) => {
          await uni(conn, CONTROL);
        });
        // and one that stalls halfway through its HEADERS frame
        await expectClose(server, H3Code.REQUEST_INCOMPLETE, async (conn) => {
          await uni(conn, CONTROL);
          const s = await conn.createBidirectionalStream();
          await send(s.writable, connectRequest(server, "/slow").subarray(0, 10));
        });
      },
    );

    await t.step("a WT stream that arrives before its CONNECT is held and delivered", async () => {
      const conn = await rawConn(server);
      await uni(conn, CONTROL);
      const connect = await conn.createBidirectionalStream();
      // session id = the CONNECT stream's id; send the WT uni stream first
      const early = await conn.createUnidirectionalStream();
      const id = Number(connect.writable.id);
      await send(
        early,
        concatBytes([encodeVarint(0x54), encodeVarint(id), new TextEncoder().encode("early")]),
        true,
      );
      await send(connect.writable, connectRequest(server, "/early"));
      const session = await server.sessions.next();
      assert.equal(session?.url?.pathname, "/early");
      assert.equal(await readText((await session!.acceptUni())!.readable), "early");
      conn.close({ closeCode: H3Code.NO_ERROR, reason: "" });
      assert.equal((await session!.closed).dropped, true);
    });

    await t.step("a stream stalled inside its header blocks no other stream", async () => {
      const conn = await rawConn(server);
      await uni(conn, CONTROL);
      const connect = await conn.createBidirectionalStream();
      await send(connect.writable, connectRequest(server, "/stalled"));
      const session = await server.sessions.next();
      const id = Number(connect.writable.id);
      // Half a stream-type varint on a uni stream and on a bidi stream, never finished.
      await uni(conn, Uint8Array.of(0x40));
      const stalledBidi = await conn.createBidirectionalStream();
      await send(stalledBidi.writable, Uint8Array.of(0x40));
      await uni(
        conn,
        concatBytes([encodeVarint(0x54), encodeVarint(id), new TextEncoder().encode("flows")]),
        true,
      );
      assert.equal(await readText((await session!.acceptUni())!.readable), "flows");
      conn.close({ closeCode: H3Code.NO_ERROR, reason: "" });
      await session!.closed;
    });

    await t.step("the well-behaved session was never disturbed", async () => {
      const b = await good.openBidi();
      await writeText(b.writable, "still here");
      const sb = await goodServer!.acceptBidi();
      assert.equal(await readText(sb!.readable), "still here");
      await writeText(sb!.writable, "yes");
      assert.equal(await readText(b.readable), "yes");
    });
  } finally {
    good.close(0, "");
    await good.closed;
    await server.stop();
  }
});
