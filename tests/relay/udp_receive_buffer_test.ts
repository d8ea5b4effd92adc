import assert from "node:assert/strict";
import { readUdpReceiveBuffers, RECOMMENDED_UDP_RECEIVE_BUFFER } from "../../src/transport/mod.ts";
import { startTestRelay } from "../support/test_relay.ts";
import { spawnServer } from "../support/processes.ts";
import { testCertificateFiles } from "../support/certs.ts";

const host = readUdpReceiveBuffers();
const roomy = host !== undefined && host.maxBytes >= RECOMMENDED_UDP_RECEIVE_BUFFER;
if (!roomy) {
  console.log(
    "SKIP relay UDP receive buffer test: net.core.rmem_max is below 4 MiB (or unreadable)",
  );
}

Deno.test({
  name: "relay: its QUIC socket gets a 4 MiB receive buffer where the host allows it",
  ignore: !roomy,
  async fn() {
    const t = await startTestRelay({ shippedTimings: true });
    try {
      // The kernel reports twice the bytes it granted; the host's default here may be 208 KiB.
      assert.ok(
        (t.relay.udpReceiveBuffer ?? 0) >= 2 * RECOMMENDED_UDP_RECEIVE_BUFFER,
        `socket buffer ${t.relay.udpReceiveBuffer}`,
      );
    } finally {
      await t.stop();
    }
  },
});

Deno.test({
  name: "sluice relay with the permissions it ships with sizes its socket (no --allow-all)",
  ignore: !roomy,
  async fn() {
    // Deno reads /proc only with --allow-all, so the socket is found through libc alone.
    const { dir, cert, key } = await testCertificateFiles();
    // The shipped flags are spawnServer's default.
    const p = spawnServer("relay", {
      env: { RELAY_ADDR: "127.0.0.1:0", CERT_FILE: cert, KEY_FILE: key },
      cwd: dir,
    });
    try {
      await p.waitForLine("relay: mesh:");
      assert.ok(
        p.lines.some((l) => l.includes("relay: UDP receive buffer 4096 KiB")),
        p.lines.join("\n"),
      );
    } finally {
      await p.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
