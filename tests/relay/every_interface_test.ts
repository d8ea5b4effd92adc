// `RELAY_ADDR=:port` (the shipped default's form) listens on every interface of both families:
// one socket on `::` takes IPv4 too, so the relay answers on 127.0.0.1 and on ::1, where
// Chromium's WebTransport dials `localhost` (localhost_chromium_test.ts). Where an IPv6 socket
// takes no IPv4 (net.ipv6.bindv6only=1, set in a network namespace of the test's own), `:port`
// binds 0.0.0.0 instead and the log says why. The shipped default is `:4433`; these relays take
// `:0` so that tests running side by side do not collide.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { probeEveryInterface } from "../../src/transport/mod.ts";
import { ipv6LoopbackMissing } from "../support/requires.ts";
import { assertAnswers, startEveryInterfaceRelay } from "./_every_interface.ts";

const IPV4_ONLY_WARNING = "relay: warning: every interface (:port) is 0.0.0.0, IPv4 only: ";

Deno.test("sluice relay with RELAY_ADDR=:0 answers on 127.0.0.1 and [::1] over QUIC, WebTransport, WebSocket and HTTPS", async (t) => {
  const relay = await startEveryInterfaceRelay();
  const lines = relay.process.lines;
  try {
    const expected = probeEveryInterface();
    await t.step("on 127.0.0.1", () => assertAnswers("127.0.0.1", relay.port, relay.http));
    await t.step({
      name: "on [::1]",
      ignore: ipv6LoopbackMissing() !== undefined || expected.ipv4Only !== undefined,
      fn: () => assertAnswers("[::1]", relay.port, relay.http),
    });
    // The bound address is printed, an IPv6 one in brackets; 0.0.0.0 only where this host's IPv6
    // sockets cannot take IPv4, and then the log says why.
    assert.equal(relay.printedHost, expected.hostname === "::" ? "[::]" : "0.0.0.0");
    assert.equal(
      lines.some((l) => l.startsWith(IPV4_ONLY_WARNING)),
      expected.ipv4Only !== undefined,
      lines.join("\n"),
    );
    // Auth off on every interface is an explicit opt-in, and the log says what it exposes.
    assert.ok(
      lines.some((l) =>
        /relay: WARNING: SLUICE_AUTH_KEYS is not set and RELAY_ADDR=:0 reaches beyond/.test(l)
      ),
      lines.join("\n"),
    );
  } finally {
    await relay.stop();
  }
});

// A network namespace of our own (`unshare -rn`: no privileges needed where user namespaces are
// allowed) whose IPv6 sockets take no IPv4; undefined when one can be made.
function netnsMissing(): string | undefined {
  try {
    const out = new Deno.Command("unshare", {
      args: ["-rn", "sh", "-c", "ip link set lo up && echo 1 > /proc/sys/net/ipv6/bindv6only"],
      stdout: "null",
      stderr: "piped",
    }).outputSync();
    if (out.success) return undefined;
    return new TextDecoder().decode(out.stderr).trim() || `unshare exited ${out.code}`;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

const noNetns = netnsMissing();
if (noNetns !== undefined) {
  console.warn(
    `NOTE: cannot make a network namespace with net.ipv6.bindv6only=1 (${noNetns}): ` +
      "the IPv4-only fallback test is SKIPPED",
  );
}

Deno.test({
  name:
    "where IPv6 sockets take no IPv4 (net.ipv6.bindv6only=1), RELAY_ADDR=:0 binds 0.0.0.0, says why, and answers on 127.0.0.1",
  ignore: noNetns !== undefined,
  fn: async () => {
    const script = fileURLToPath(new URL("./_every_interface.ts", import.meta.url));
    const out = await new Deno.Command("unshare", {
      args: [
        "-rn",
        "sh",
        "-c",
        'ip link set lo up && echo 1 > /proc/sys/net/ipv6/bindv6only && exec "$0" run -A "$1"',
        Deno.execPath(),
        script,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.ok(out.success, text);
    const lines: string[] = JSON.parse(
      new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!,
    );
    const warning = lines.find((l) => l.startsWith(IPV4_ONLY_WARNING));
    assert.match(warning ?? lines.join("\n"), /net\.ipv6\.bindv6only=1/);
    assert.ok(lines.some((l) => /relay: listening on 0\.0\.0\.0:\d+ /.test(l)), lines.join("\n"));
  },
});
