/**
 * The load generator's raw baseline: a bare Deno QUIC server holding the same
 * connections as the relay would, sending each group to every connection on
 * a uni stream of its own (payload only, no moq framing, no credentials).
 * What the relay costs beyond it is the relay's own work.
 *
 *   deno run -A raw_server.ts PORT CERT_FILE KEY_FILE SIZE
 *
 * Reads one sequence number per line on stdin and sends that group at once:
 * the send time (float64 ms since the epoch) in bytes 0..8, the sequence
 * (float64) in bytes 8..16, the rest filler. On SIGUSR2 it prints its memory
 * after a GC as `gc-host: {...}` (run with --v8-flags=--expose-gc), like
 * bench/support/gc_host.ts.
 *
 * @module
 */
import { raiseUdpReceiveBuffer } from "../../../src/transport/mod.ts";
import { wallNow } from "./protocol.ts";

/** ALPN token of the raw baseline. */
export const RAW_ALPN = "loadgen-raw";

if (import.meta.main) {
  const [port, certFile, keyFile, size] = Deno.args;
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: Number(port) });
  // The same socket buffer as the relay gives itself.
  raiseUdpReceiveBuffer(endpoint.addr.port);
  const listener = endpoint.listen({
    cert: Deno.readTextFileSync(certFile!),
    key: Deno.readTextFileSync(keyFile!),
    alpnProtocols: [RAW_ALPN],
    maxIdleTimeout: 30_000,
  });
  const conns = new Set<Deno.QuicConn>();
  (async () => {
    for (;;) {
      const incoming = await listener.incoming();
      Promise.resolve(incoming.accept<false>()).then((conn: Deno.QuicConn) => {
        conns.add(conn);
        conn.closed.catch(() => {}).finally(() => conns.delete(conn));
      }, () => {});
    }
  })().catch(() => {});

  const filler = new Uint8Array(Math.max(16, Number(size)));
  const send = async (conn: Deno.QuicConn, bytes: Uint8Array) => {
    try {
      const s = await conn.createUnidirectionalStream();
      const w = s.getWriter();
      w.write(bytes).catch(() => {});
      await w.close();
    } catch {
      // The connection is gone.
    }
  };
  const gc = (globalThis as { gc?: () => void }).gc;
  Deno.addSignalListener("SIGUSR2", () => {
    gc?.();
    const m = Deno.memoryUsage();
    console.error(
      `gc-host: ${JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed, external: m.external })}`,
    );
  });
  console.error(`raw: listening on 127.0.0.1:${endpoint.addr.port}`);
  for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    for (const seq of line.split("\n").filter((l) => l !== "")) {
      const bytes = filler.slice();
      const view = new DataView(bytes.buffer);
      view.setFloat64(0, wallNow());
      view.setFloat64(8, Number(seq));
      for (const conn of conns) void send(conn, bytes);
    }
  }
}
