// `sluice relay` as a real process: environment config, V8 flag re-exec,
// dev certificate fallback, graceful stop on SIGTERM.
import assert from "node:assert/strict";
import { connect, VERSIONS } from "../../src/moq/mod.ts";
import { connectQuicSession } from "../../src/transport/mod.ts";
import { freeUdpTcpPort } from "../../src/transport/mod.ts";
import { spawnServer } from "../support/processes.ts";
import { within } from "../support/wait.ts";
import { testCertificate, testCertificateFiles } from "../support/certs.ts";
import {
  readUdpReceiveBuffers,
  RECOMMENDED_UDP_RECEIVE_BUFFER,
  udpReceiveBufferAdvice,
} from "../../src/transport/mod.ts";

/** The relay answers /health over HTTPS and a MoQ session over native QUIC on `port`. */
async function assertServes(port: number, http: Deno.HttpClient, sha256: Uint8Array) {
  const health = await fetch(`https://localhost:${port}/health`, { client: http });
  assert.equal(health.status, 200);
  await health.body?.cancel();
  const session = await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
    alpn: VERSIONS,
    serverCertificateHashes: [{ algorithm: "sha-256", value: sha256 }],
  });
  const moq = await connect(session);
  moq.close(0, "");
}

Deno.test("sluice relay runs from the environment, applies RELAY_SEMI_SPACE_MB and stops on SIGTERM", async () => {
  const { dir, cert, key } = await testCertificateFiles();
  const c = await testCertificate();
  const port = freeUdpTcpPort();
  const p = spawnServer("relay", {
    env: {
      RELAY_ADDR: `127.0.0.1:${port}`,
      CERT_FILE: cert,
      KEY_FILE: key,
      RELAY_SEMI_SPACE_MB: "16",
      // Not the shipped 8: the test reads back that the relay applied the setting it was given.
      GROUP_CACHE_SIZE: "4",
    },
    cwd: dir,
  });
  const http = Deno.createHttpClient({ caCerts: [c.certPem] });
  try {
    await p.ready();
    assert.ok(
      p.lines.some((l) => /DENO_V8_FLAGS=--max-semi-space-size=16/.test(l)),
      p.lines.join("\n"),
    );
    assert.ok(p.lines.some((l) => /young generation 16 MiB \[RELAY_SEMI_SPACE_MB\]/.test(l)));
    await assertServes(port, http, c.sha256);
  } finally {
    const status = await p.stop();
    http.close();
    await Deno.remove(dir, { recursive: true });
    assert.equal(status.code, 0, p.lines.join("\n"));
  }
  assert.ok(p.lines.some((l) => l.includes("relay: stopping (SIGTERM)")));
});

// Whether UDP and TCP `port` on 127.0.0.1 can be bound (nothing holds it).
function portFree(port: number): boolean {
  let udp: Deno.DatagramConn | undefined;
  let tcp: Deno.Listener | undefined;
  try {
    udp = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port });
    tcp = Deno.listen({ hostname: "127.0.0.1", port });
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.AddrInUse) return false;
    throw e;
  } finally {
    udp?.close();
    tcp?.close();
  }
}

function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

// A supervisor (a test, systemd with KillMode=process, a shell script) that SIGKILLs the pid it
// started must not leave the relay that process re-executed serving: it held the port, so the
// next start failed with "address in use", and kept routing with nobody to stop it.
Deno.test("sluice relay applying RELAY_SEMI_SPACE_MB ends when the process it was started as is SIGKILLed", async () => {
  const { dir, cert, key } = await testCertificateFiles();
  const port = freeUdpTcpPort();
  const p = spawnServer("relay", {
    env: {
      RELAY_ADDR: `127.0.0.1:${port}`,
      CERT_FILE: cert,
      KEY_FILE: key,
      RELAY_SEMI_SPACE_MB: "16",
    },
    cwd: dir,
  });
  let server: number | undefined;
  try {
    await p.ready();
    server = p.serverPid();
    assert.notEqual(server, p.pid, "the relay restarted itself to apply the flag");
    assert.ok(!portFree(port), "the relay holds its port");
    // The pid the supervisor started, alone: not its process group, not the re-executed child.
    p.child.kill("SIGKILL");
    await p.child.status;
    // A few seconds at most: the relay stops at once when it sees its parent gone.
    const deadline = Date.now() + 10_000;
    while ((alive(server) || !portFree(port)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(!alive(server), "the re-executed relay ended");
    assert.ok(portFree(port), "its port is free");
    await p.done;
    assert.ok(
      p.line("relay: stopping: the process that started this one is gone"),
      p.lines.join("\n"),
    );
  } finally {
    if (server !== undefined && alive(server)) Deno.kill(server, "SIGKILL");
    await p.done;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sluice relay with RELAY_ADDR port 0 serves UDP and TCP on one picked port and prints it", async () => {
  const { dir, cert, key } = await testCertificateFiles();
  const c = await testCertificate();
  const p = spawnServer("relay", {
    env: {
      RELAY_ADDR: "127.0.0.1:0",
      CERT_FILE: cert,
      KEY_FILE: key,
    },
    cwd: dir,
  });
  const http = Deno.createHttpClient({ caCerts: [c.certPem] });
  try {
    await p.ready();
    const line = p.lines.find((l) => l.includes("relay: listening"))!;
    const port = Number(/listening on 127\.0\.0\.1:(\d+) /.exec(line)?.[1]);
    assert.ok(port > 0, line);
    await assertServes(port, http, c.sha256);
    // The relay (with its shipped permissions) sizes its own socket up to net.core.rmem_max, and warns about
    // the host's UDP receive buffer when, and only when, that maximum is too small for 4 MiB.
    await p.waitForLine("relay: mesh:");
    const udp = readUdpReceiveBuffers();
    const roomy = udp !== undefined && udp.maxBytes >= RECOMMENDED_UDP_RECEIVE_BUFFER;
    assert.equal(
      p.lines.some((l) => l.includes("relay: warning: the host's UDP receive buffer")),
      !roomy && udp !== undefined && udpReceiveBufferAdvice(udp) !== undefined,
      p.lines.join("\n"),
    );
    assert.equal(
      p.lines.some((l) => l.includes("relay: UDP receive buffer 4096 KiB")),
      roomy,
      p.lines.join("\n"),
    );
  } finally {
    await p.stop();
    http.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sluice relay without certificate files serves a generated one and logs its SHA-256", async () => {
  const dir = await Deno.makeTempDir();
  const port = freeUdpTcpPort();
  const p = spawnServer("relay", { env: { RELAY_ADDR: `127.0.0.1:${port}` }, cwd: dir });
  try {
    await p.ready();
    const line = p.lines.find((l) => l.includes("generated development certificate"));
    assert.ok(line, p.lines.join("\n"));
    assert.ok(p.lines.some((l) => l.includes("WARNING: SLUICE_AUTH_KEYS is not set")));
    const hex = /sha256 ([0-9a-f]{64})/.exec(line)![1]!;
    const sha = new Uint8Array(hex.match(/../g)!.map((h) => parseInt(h, 16)));
    const session = await connectQuicSession(new URL(`moqt://localhost:${port}/`), {
      alpn: VERSIONS,
      serverCertificateHashes: [{ algorithm: "sha-256", value: sha }],
    });
    const moq = await connect(session);
    moq.close(0, "");
  } finally {
    await p.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sluice relay refuses an invalid setting, naming the variable", async () => {
  const p = spawnServer("relay", { env: { GROUP_CACHE_SIZE: "lots" }, cwd: Deno.cwd() });
  const status = await p.finished();
  assert.equal(status.code, 2);
  assert.ok(p.lines.some((l) => l.includes("GROUP_CACHE_SIZE must be an integer")));
});

Deno.test("sluice relay refuses a stream grant out of range before it listens", async () => {
  const p = spawnServer("relay", {
    env: { RELAY_INCOMING_STREAMS: "8", RELAY_ADDR: "127.0.0.1:0" },
    cwd: Deno.cwd(),
  });
  // A relay that took the value would listen and keep running: it is stopped after the wait.
  const status = await within(p.finished(), 30_000, "the relay to refuse").finally(() => p.stop());
  assert.equal(status.code, 2, p.lines.join("\n"));
  assert.ok(
    p.lines.some((l) =>
      l.includes("RELAY_INCOMING_STREAMS must be an integer number of streams between 16 and 10000")
    ),
    p.lines.join("\n"),
  );
  assert.ok(!p.lines.some((l) => l.includes("listening")), "it never listened");
});
