/**
 * The host's UDP receive buffer, which every QUIC socket gets: Deno opens
 * its QUIC endpoints without sizing their buffers, so the kernel's default
 * (`net.core.rmem_default`) applies. A relay reads ACKs from every
 * subscriber and groups from its publishers on one socket; while a
 * delivery turn runs, that socket fills, and past the buffer the kernel
 * drops what arrives (docs/relay.md, "UDP receive buffer").
 */

/** Receive buffer sizes of this host, bytes. */
export interface UdpReceiveBuffers {
  /** `net.core.rmem_default`: what a socket that asks for no size gets. */
  readonly defaultBytes: number;
  /** `net.core.rmem_max`: the most a socket may ask for. */
  readonly maxBytes: number;
}

/**
 * The default the relay's measurements recommend, bytes: at 100
 * subscribers 4 MiB left no drops where the common 208 KiB dropped
 * thousands of datagrams a run.
 */
export const RECOMMENDED_UDP_RECEIVE_BUFFER = 4 * 1024 * 1024;

const NAMES = ["net.core.rmem_default", "net.core.rmem_max"];

/**
 * Runs `sysctl -n` for `names`, one value per line. Deno reads /proc/sys
 * only with --allow-all, so the values come from the sysctl command
 * (--allow-run=sysctl).
 */
function sysctl(names: readonly string[]): string {
  // Never prompt (a relay started in a terminal would stop at the question).
  if (Deno.permissions.querySync({ name: "run", command: "sysctl" }).state !== "granted") {
    throw new Error("no permission to run sysctl");
  }
  const out = new Deno.Command("sysctl", { args: ["-n", ...names], stderr: "null" }).outputSync();
  if (!out.success) throw new Error(`sysctl exited with ${out.code}`);
  return new TextDecoder().decode(out.stdout);
}

/**
 * Reads this host's buffer sizes; undefined where they cannot be read (no
 * sysctl command, not Linux, or no permission to run it).
 */
export function readUdpReceiveBuffers(
  read: (names: readonly string[]) => string = sysctl,
): UdpReceiveBuffers | undefined {
  try {
    const [defaultBytes, maxBytes] = read(NAMES).trim().split(/\s+/).map(Number);
    const valid = (n: number | undefined): n is number => Number.isSafeInteger(n) && n! > 0;
    if (!valid(defaultBytes) || !valid(maxBytes)) return undefined;
    return { defaultBytes, maxBytes };
  } catch {
    return undefined;
  }
}

/** What to do about `buffers`, or undefined when the default is large enough. */
export function udpReceiveBufferAdvice(buffers: UdpReceiveBuffers): string | undefined {
  if (buffers.defaultBytes >= RECOMMENDED_UDP_RECEIVE_BUFFER) return undefined;
  const want = RECOMMENDED_UDP_RECEIVE_BUFFER;
  return `the host's UDP receive buffer is ${kib(buffers.defaultBytes)} ` +
    `(net.core.rmem_default); with many subscribers the QUIC socket overflows and the kernel ` +
    `drops datagrams. Raise it to ${kib(want)}: ` +
    `sysctl -w net.core.rmem_default=${want} net.core.rmem_max=${
      Math.max(want, buffers.maxBytes)
    } (deploy/sysctl.conf)`;
}

function kib(bytes: number): string {
  return `${Math.round(bytes / 1024)} KiB`;
}
