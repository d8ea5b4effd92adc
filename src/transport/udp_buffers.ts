/**
 * The host's UDP receive buffer, which every QUIC socket gets: Deno opens
 * its QUIC endpoints without sizing their buffers, so the kernel's default
 * (`net.core.rmem_default`) applies. A relay reads ACKs from every
 * subscriber and groups from its publishers on one socket; while a
 * delivery turn runs, that socket fills, and past the buffer the kernel
 * drops what arrives (docs/relay.md, "UDP receive buffer").
 */
import { type Glibc, glibc } from "../libc/mod.ts";

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

// Linux's socket numbers (the same on x86_64 and aarch64).
const SOL_SOCKET = 1;
const SO_TYPE = 3;
const SO_RCVBUF = 8;
const SOCK_DGRAM = 2;
const SO_MEMINFO = 55;
const AF_INET = 2;
const AF_INET6 = 10;
/** Descriptors looked through for the socket; a server opens its sockets early. */
const MAX_FD = 4096;

/**
 * Asks for a receive buffer of `bytes` on this process's UDP socket bound to
 * `port` (a QUIC endpoint's, which Deno opens without sizing it), so a burst
 * of ACKs from thousands of sessions waits in the buffer instead of being
 * dropped. The kernel grants at most `net.core.rmem_max`; no privilege is
 * used to go past it. Returns the buffer the socket has afterwards, as the
 * kernel reports it (`SO_RCVBUF`: twice the usable bytes, the other half
 * being bookkeeping), or undefined where it cannot be done: not Linux, or no
 * FFI permission for libc.
 */
export function raiseUdpReceiveBuffer(
  port: number,
  bytes: number = RECOMMENDED_UDP_RECEIVE_BUFFER,
): number | undefined {
  const libc = glibc();
  if (libc === undefined) return undefined;
  const fd = udpSocketFd(libc, port);
  if (fd === undefined) return undefined;
  const value = new Int32Array([bytes]);
  libc.setsockopt(fd, SOL_SOCKET, SO_RCVBUF, value, 4);
  const size = new Uint32Array([4]);
  if (libc.getsockopt(fd, SOL_SOCKET, SO_RCVBUF, value, size) !== 0) return undefined;
  return value[0];
}

/**
 * How full this process's UDP socket bound to `port` is: a function giving the
 * bytes waiting to be read over the bytes the kernel lets wait (0..1; from
 * `SO_MEMINFO`, as `ss -m` shows them), or undefined where it cannot be read
 * (not Linux, or no FFI permission for libc). The socket is found once; each
 * call is one `getsockopt`. The relay holds its delivery back while its
 * socket fills (`DeliveryTurns.watchBacklog`).
 */
export function udpReceiveQueue(port: number): (() => number) | undefined {
  const libc = glibc();
  if (libc === undefined) return undefined;
  const fd = udpSocketFd(libc, port);
  if (fd === undefined) return undefined;
  const info = new Uint32Array(16);
  const len = new Uint32Array(1);
  return () => {
    len[0] = info.byteLength;
    if (libc.getsockopt(fd, SOL_SOCKET, SO_MEMINFO, info, len) !== 0 || info[1] === 0) return 0;
    return info[0]! / info[1]!;
  };
}

// This process's UDP socket bound to `port`: Deno names no descriptor, so each one is asked
// what it is (getsockname, SO_TYPE); /proc would need --allow-all.
function udpSocketFd(libc: Glibc, port: number): number | undefined {
  const addr = new Uint8Array(128);
  const view = new DataView(addr.buffer);
  const len = new Uint32Array(1);
  const type = new Int32Array(1);
  const typeLen = new Uint32Array(1);
  for (let fd = 3; fd < MAX_FD; fd++) {
    len[0] = addr.byteLength;
    if (libc.getsockname(fd, addr, len) !== 0) continue; // not a socket, or not open
    const family = view.getUint16(0, true);
    if (family !== AF_INET && family !== AF_INET6) continue;
    if (view.getUint16(2, false) !== port) continue;
    typeLen[0] = 4;
    if (libc.getsockopt(fd, SOL_SOCKET, SO_TYPE, type, typeLen) !== 0) continue;
    if (type[0] === SOCK_DGRAM) return fd;
  }
  return undefined;
}

/** One row of /proc/net/udp or udp6: a socket's local port and drop counter. */
interface UdpSocketRow {
  readonly port: number;
  readonly drops: number;
}

// The host's UDP sockets (IPv4 and IPv6 tables), as /proc/net lists them.
function udpSocketRows(): UdpSocketRow[] {
  const rows: UdpSocketRow[] = [];
  for (const file of ["/proc/net/udp", "/proc/net/udp6"]) {
    let text: string;
    try {
      text = Deno.readTextFileSync(file);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) continue; // no IPv6 table on this host
      throw e;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      const local = f[1];
      if (local === undefined || f.length < 13) continue;
      const port = parseInt(local.slice(local.lastIndexOf(":") + 1), 16);
      rows.push({ port, drops: Number(f.at(-1)) });
    }
  }
  return rows;
}

/**
 * Datagrams the kernel dropped for a full receive buffer at the UDP sockets
 * bound to `ports` (the `drops` column of /proc/net/udp and udp6), summed;
 * NaN where /proc cannot be read (not Linux, or no `--allow-all`: Deno reads
 * /proc only with it).
 */
export function udpSocketDrops(ports: Iterable<number>): number {
  const wanted = new Set(ports);
  try {
    return udpSocketRows().filter((r) => wanted.has(r.port)).reduce((n, r) => n + r.drops, 0);
  } catch {
    return NaN;
  }
}
