// A funnel killed with SIGKILL sends no CONNECTION_CLOSE: the relay must
// notice the silence itself and withdraw the funnel's route, at shipped
// defaults, within a second or two (before: 10.6-10.9 s), so subscribers and
// peers can move to another route.
import assert from "node:assert/strict";
import { testCertificateFiles } from "../../support/certs.ts";
import { post } from "../../support/live_funnel.ts";
import { quiet } from "../../support/quiet.ts";
import { spawnServer } from "../../support/processes.ts";
import { until } from "../../support/wait.ts";
import { freeUdpTcpPort } from "../../../src/transport/mod.ts";
import { DEAD_PEER_MS } from "../../../src/transport/mod.ts";
import { routeOf, startMeshRelay, stopMesh } from "../mesh/_mesh.ts";

Deno.test("a funnel killed with SIGKILL loses its route on the relay soon after its last packet", async () => {
  using _q = quiet();
  const files = await testCertificateFiles();
  const relay = await startMeshRelay("a", files);
  const port = freeUdpTcpPort();
  const funnel = spawnServer("funnel", {
    env: {
      FUNNEL_ADDR: `127.0.0.1:${port}`,
      FUNNEL_SERVE_ADDR: "none",
      RELAY_URL: `moqt://localhost:${relay.port}/`,
      RELAY_CA_FILE: files.cert,
    },
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    await until(async () => {
      try {
        return (await post(base, "room/9/chat", "1")).status === 201;
      } catch {
        return false;
      }
    }, "the funnel to take a record");
    await routeOf(relay, "/room/9");
    const killed = performance.now();
    funnel.signal("SIGKILL");
    await funnel.child.status;
    await until(
      async () => !(await relay.routes()).some((r) => r.path === "/room/9"),
      "the route to go",
    );
    const noticed = performance.now() - killed;
    console.log(`route withdrawn ${Math.round(noticed)} ms after the SIGKILL`);
    // Not a speed target: the order of magnitude that tells 1 s idle timeouts from 10 s ones.
    assert.ok(noticed < DEAD_PEER_MS * 4, `noticed after ${noticed} ms`);
  } finally {
    await funnel.kill();
    await stopMesh([relay], files);
  }
});
