import { getHeapStatistics } from "node:v8";
import type { Setting } from "../../config/mod.ts";
import { ConfigError } from "../../config/mod.ts";
import { type GcResolution, resolveGc, runtimeV8FlagsArgument } from "../../config/mod.ts";
import { loadRelayConfig } from "../../config/mod.ts";
import {
  readUdpReceiveBuffers,
  RECOMMENDED_UDP_RECEIVE_BUFFER,
  udpReceiveBufferAdvice,
  type UdpReceiveBuffers,
} from "../../transport/mod.ts";

/** The heading line doctor prints first. */
export const DOCTOR_HEADING = "sluice relay: effective runtime configuration";

/** Guidance printed under the garbage-collector block (from bench/relay_gc measurements). */
export const GC_GUIDANCE: readonly string[] = [
  "DENO_V8_FLAGS and --v8-flags always override RELAY_SEMI_SPACE_MB.",
  "Leave RELAY_SEMI_SPACE_MB unset unless memory is tight. Measured on a 2-core host",
  "(deno task loadgen, 100 subscribers, 30 groups/s of 1200 B): relay RSS 246 MiB with the V8",
  "default, 202 MiB with RELAY_SEMI_SPACE_MB=1, 298 MiB with 64; relay CPU 12.8%, 14.4% and",
  "13.1% of a core: a larger young generation bought no CPU, a smaller one saves RSS.",
  "Per session the JS heap holds about 45 KiB; most of a session's memory is native",
  "(QUIC connection and stream state, ~235-330 KiB per session measured), which no V8 flag moves.",
  "Do not set --max-old-space-size for this workload: unlike GOMEMLIMIT it is a hard ceiling and",
  "V8 aborts the process when the old generation reaches it; if a container limit forces it,",
  "leave at least 25% headroom above the RSS deno task loadgen measures for your session count.",
];

/** Options for {@link runDoctor}. */
export interface DoctorOptions {
  /** The runtime's `--v8-flags=` value, when the caller detected one. */
  readonly cliV8Flags?: string;
  /** V8's heap size limit of this process in MiB, shown as the runtime default on this host. */
  readonly heapLimitMb?: number;
  /** This host's UDP receive buffers; null when they cannot be read. */
  readonly udpReceiveBuffers?: UdpReceiveBuffers | null;
}

function mb(v: number | undefined, fallback: string): string {
  return v === undefined ? fallback : `${v} MiB`;
}

/** Renders the garbage-collector block (Inputs, Effective with source, Why, Guidance). */
export function renderGcBlock(gc: GcResolution, heapLimitMb?: number): string[] {
  const unset = (v: string | undefined): string => v ?? "(unset)";
  const hostDefault = heapLimitMb === undefined
    ? "V8 default"
    : `V8 default (this process reports a heap limit of ${Math.round(heapLimitMb)} MiB)`;
  return [
    "Garbage collector (V8)",
    "  Inputs:",
    `    DENO_V8_FLAGS        = ${unset(gc.inputs.denoV8Flags)}`,
    `    --v8-flags           = ${unset(gc.inputs.cliV8Flags)}`,
    `    RELAY_SEMI_SPACE_MB  = ${unset(gc.inputs.relaySemiSpaceMb)}`,
    `    --max-old-space-size = ${
      gc.heapCeiling.mb === undefined
        ? "(unset)"
        : `${gc.heapCeiling.mb} (${gc.heapCeiling.source})`
    }`,
    "  Effective:",
    `    young generation (--max-semi-space-size): ${
      mb(gc.semiSpace.mb, "V8 default")
    }  [source: ${gc.semiSpace.source}]`,
    `    heap ceiling (--max-old-space-size): ${
      mb(gc.heapCeiling.mb, hostDefault)
    }  [source: ${gc.heapCeiling.source}]`,
    `  Why: ${gc.why}`,
    "  Guidance:",
    ...GC_GUIDANCE.map((l) => `    ${l}`),
  ];
}

/** Renders the UDP receive buffer block: the kernel's sizes and whether to raise them. */
export function renderUdpBlock(buffers: UdpReceiveBuffers | null): string[] {
  const heading = "Host UDP receive buffer (every QUIC socket gets the kernel default: " +
    "Deno sets no size of its own)";
  if (buffers === null) {
    return [
      heading,
      "  not readable here (no sysctl command, not Linux, or no --allow-run=sysctl)",
    ];
  }
  const advice = udpReceiveBufferAdvice(buffers);
  return [
    heading,
    `  net.core.rmem_default = ${buffers.defaultBytes}`,
    `  net.core.rmem_max     = ${buffers.maxBytes}`,
    advice === undefined
      ? `  Enough: at or above the recommended ${RECOMMENDED_UDP_RECEIVE_BUFFER}.`
      : `  Raise it: ${advice}`,
  ];
}

function line(s: Setting<unknown>): string {
  return `  ${s.variable.padEnd(24)} ${s.display}  [${s.source}]`;
}

function defaultDoctorOptions(): DoctorOptions {
  const cli = runtimeV8FlagsArgument();
  const heapLimitMb = getHeapStatistics().heap_size_limit / 1048576;
  const udpReceiveBuffers = readUdpReceiveBuffers() ?? null;
  return cli === undefined
    ? { heapLimitMb, udpReceiveBuffers }
    : { cliV8Flags: cli, heapLimitMb, udpReceiveBuffers };
}

/**
 * `sluice doctor`: prints the relay's effective runtime configuration with
 * reasons. Read-only. Returns the exit code (1 when a setting is invalid).
 */
export function runDoctor(
  env: Record<string, string | undefined>,
  print: (line: string) => void,
  options: DoctorOptions = defaultDoctorOptions(),
): number {
  print(DOCTOR_HEADING);
  print("");
  let gc: GcResolution;
  try {
    gc = resolveGc(env, options.cliV8Flags);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    for (const p of e.details) {
      print(`Garbage collector (V8): invalid setting: ${p.variable} ${p.message}`);
    }
    return 1;
  }
  for (const l of renderGcBlock(gc, options.heapLimitMb)) print(l);
  print("");
  if (options.udpReceiveBuffers !== undefined) {
    for (const l of renderUdpBlock(options.udpReceiveBuffers)) print(l);
    print("");
  }
  try {
    const c = loadRelayConfig(
      env,
      options.cliV8Flags === undefined ? {} : { cliV8Flags: options.cliV8Flags },
    );
    print("Relay settings");
    for (
      const s of [
        c.addr,
        c.certFile,
        c.keyFile,
        c.authKeys,
        c.authKeysCache,
        c.relayToken,
        c.authAudience,
        c.authIssuer,
        c.groupCacheSize,
        c.groupCacheMs,
        c.groupCacheBytes,
        c.publisherGraceMs,
        c.pprof,
        c.metricsAddr,
        c.corsAllowedOrigins,
        c.datagramTracks,
        c.deliveryTurnMs,
        c.incomingStreams,
        c.mesh.peers,
        c.mesh.peerKey,
        c.mesh.peerCaFile,
        c.mesh.name,
        c.mesh.goawayRedirectUri,
      ] as Setting<unknown>[]
    ) print(line(s));
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    for (const p of e.details) print(`Relay settings: invalid setting ${p.variable}: ${p.message}`);
    return 1;
  }
  return 0;
}
