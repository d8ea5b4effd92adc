// What `:port` binds where IPv6 cannot be bound at all. A kernel without IPv6 (booted with
// ipv6.disable=1) refuses an IPv6 socket with EAFNOSUPPORT; no test host can be made into one,
// so that bind failure is injected here, every other bind being real. The other fallback, IPv6
// sockets that take no IPv4, is tested for real in tests/relay/every_interface_test.ts.
import assert from "node:assert/strict";
import { probeEveryInterface, type ProbeListen } from "../../src/transport/mod.ts";

// Deno.listen, except that binding `::` fails with `error`.
function withoutIpv6(error: Error): ProbeListen {
  return (options) => {
    if (options.hostname === "::") throw error;
    return Deno.listen(options);
  };
}

Deno.test("where [::] cannot be bound (no IPv6 on the host), every interface is 0.0.0.0 and says why", () => {
  const eafnosupport = new Error("Address family not supported by protocol (os error 97)");
  assert.deepEqual(probeEveryInterface(withoutIpv6(eafnosupport)), {
    hostname: "0.0.0.0",
    ipv4Only: "this host has no IPv6 (Address family not supported by protocol (os error 97))",
  });
  const notAvailable = new Deno.errors.AddrNotAvailable("Cannot assign requested address");
  assert.match(
    probeEveryInterface(withoutIpv6(notAvailable)).ipv4Only ?? "",
    /^this host has no IPv6/,
  );
  // Anything else that keeps [::] from being bound (here, a missing permission) is named as such.
  const denied = new Deno.errors.NotCapable('Requires net access to "[::]:0"');
  assert.deepEqual(probeEveryInterface(withoutIpv6(denied)), {
    hostname: "0.0.0.0",
    ipv4Only: '[::] cannot be bound here (Requires net access to "[::]:0")',
  });
});
