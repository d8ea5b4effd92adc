// Shows the Deno 2.9 WebSocket ping timeout closing a client that answered
// every ping (why the relay turns it off where QMux has QX_PING; see
// docs/relay.md, "WebSocket"). A `Deno.upgradeWebSocket` server with
// `idleTimeout: 2` pings after 1 s without a message and closes 1 s after a
// ping without one. The raw client here first leaves the server's writes
// blocked (it reads nothing while the server sends 16 MiB), so the server's
// ping waits to be written; a message it handles meanwhile re-arms the idle
// timer, and the ping's continuation then overwrites that timer, which
// nothing can cancel any more. From then on two ping timers run; when the
// second fires before the first ping's answer arrived, the first ping's
// answer timer is lost too and closes the connection.
//
//   deno run -A bench/websocket_ping_race.ts            # pongs after 700 ms: closed, 1001
//   deno run -A bench/websocket_ping_race.ts --no-early-message   # same pongs: never closed
//   deno run -A bench/websocket_ping_race.ts --pong-delay-ms 0    # two pings a second, no close
import { parseArgs } from "node:util";
import { encodeClientFrame, Opcode, parseServerFrame } from "../src/transport/mod.ts";
import { concatBytes } from "../src/wire/mod.ts";

const { values } = parseArgs({
  options: {
    "pong-delay-ms": { type: "string", default: "700" },
    "seconds": { type: "string", default: "8" },
    "no-early-message": { type: "boolean", default: false },
  },
});
const pongDelayMs = Number(values["pong-delay-ms"]);
const closes: string[] = [];
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
  const { socket, response } = Deno.upgradeWebSocket(req, { idleTimeout: 2 });
  socket.onopen = () => socket.send(new Uint8Array(16 << 20));
  socket.onclose = (e) => closes.push(`${e.code} ${e.reason}`);
  return response;
});
const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
await conn.write(
  new TextEncoder().encode(
    "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
  ),
);
const t0 = performance.now();
const at = () => ((performance.now() - t0) / 1000).toFixed(2);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
await sleep(1300); // the server's first ping (at 1 s) waits behind its blocked write
if (!values["no-early-message"]) {
  await conn.write(encodeClientFrame(Opcode.BINARY, new Uint8Array([1])));
}
await sleep(300);
// Read everything from now on and answer every ping, after `pongDelayMs` (a round trip).
(async () => {
  const chunk = new Uint8Array(1 << 20);
  let pending = new Uint8Array(0);
  let inHeader = true;
  for (;;) {
    const n = await conn.read(chunk).catch(() => null);
    if (n === null) return;
    pending = concatBytes([pending, chunk.subarray(0, n)]);
    if (inHeader) {
      const end = new TextDecoder().decode(pending.subarray(0, 512)).indexOf("\r\n\r\n");
      if (end < 0) continue;
      pending = pending.subarray(end + 4);
      inHeader = false;
    }
    let parsed;
    while ((parsed = parseServerFrame(pending, 64 << 20))) {
      pending = pending.subarray(parsed.size);
      if (parsed.frame.opcode === Opcode.PING) {
        console.log(`${at()} s: ping, answered ${pongDelayMs} ms later`);
        const pong = encodeClientFrame(Opcode.PONG, parsed.frame.payload.slice());
        setTimeout(() => conn.write(pong).catch(() => {}), pongDelayMs);
      } else if (parsed.frame.opcode === Opcode.CLOSE) {
        console.log(`${at()} s: close frame from the server`);
      }
    }
  }
})();
await sleep(Number(values.seconds) * 1000);
console.log(`server closes: ${closes.length === 0 ? "none" : closes.join("; ")}`);
Deno.exit(0);
