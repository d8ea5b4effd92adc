/**
 * The relay's garbage-collector settings: which V8 heap flags apply, where
 * each came from, and the flags the relay must add by re-executing itself.
 * `sluice doctor` and relay startup share this resolution.
 *
 * @module
 */
import { type Env, EnvReader } from "./env.ts";
import { parseIntIn } from "./parse.ts";

/** Where a V8 heap setting came from. */
export type GcSource = "--v8-flags" | "DENO_V8_FLAGS" | "RELAY_SEMI_SPACE_MB" | "runtime default";

/** The resolved garbage-collector settings (V8's young generation and heap ceiling). */
export interface GcResolution {
  /** Raw inputs, each undefined when unset. */
  readonly inputs: {
    /** DENO_V8_FLAGS as the operator set it (without flags the relay itself appended). */
    readonly denoV8Flags: string | undefined;
    /** The runtime's `--v8-flags=` argument, when detectable. */
    readonly cliV8Flags: string | undefined;
    /** RELAY_SEMI_SPACE_MB. */
    readonly relaySemiSpaceMb: string | undefined;
  };
  /** Young-generation semi-space size in MiB (undefined: V8 default) and its source. */
  readonly semiSpace: { readonly mb: number | undefined; readonly source: GcSource };
  /** Old-generation heap ceiling in MiB (undefined: V8 default) and its source. */
  readonly heapCeiling: { readonly mb: number | undefined; readonly source: GcSource };
  /** V8 flags the relay must add at start (empty when nothing to apply or already applied). */
  readonly apply: readonly string[];
  /** True when this process was started with the relay's own flags already applied. */
  readonly applied: boolean;
  /** Why the effective values are what they are, in words. */
  readonly why: string;
}

/** Marker the relay sets on its re-executed child: the flags it appended to DENO_V8_FLAGS. */
export const APPLIED_V8_FLAGS_VARIABLE = "SLUICE_RELAY_APPLIED_V8_FLAGS";

/** Splits a V8 flag list (comma or space separated, as Deno accepts it). */
function splitFlags(text: string | undefined): string[] {
  if (text === undefined) return [];
  return text.split(/[,\s]+/).filter((f) => f !== "");
}

/** Value in MiB of the last occurrence of a V8 size flag (dashes or underscores), if any. */
function flagMb(flags: readonly string[], name: string): number | undefined {
  let found: number | undefined;
  const want = name.replace(/_/g, "-");
  for (const f of flags) {
    const m = /^--([a-z_-]+)=(\d+)$/.exec(f);
    if (m && m[1]!.replace(/_/g, "-") === want) found = Number(m[2]);
  }
  return found;
}

/**
 * Resolves the V8 heap settings. The runtime's own knob always wins:
 * `--v8-flags` (appended last by Deno) over `DENO_V8_FLAGS`, both over the
 * relay's RELAY_SEMI_SPACE_MB, which applies only when neither sets the
 * young generation.
 */
export function resolveGc(env: Env, cliV8Flags?: string): GcResolution {
  const reader = new EnvReader(env);
  const gc = readGc(reader, cliV8Flags);
  reader.finish();
  return gc;
}

/** {@link resolveGc} through a reader that collects its problems with the caller's. */
export function readGc(reader: EnvReader, cliV8Flags?: string): GcResolution {
  const appliedMarker = reader.text(APPLIED_V8_FLAGS_VARIABLE);
  let denoV8Flags = reader.text("DENO_V8_FLAGS");
  let applied = false;
  if (
    appliedMarker !== undefined && denoV8Flags !== undefined && denoV8Flags.endsWith(appliedMarker)
  ) {
    // This is the relay's own re-executed child: report the operator's input, not ours.
    denoV8Flags = denoV8Flags.slice(0, denoV8Flags.length - appliedMarker.length).replace(/,$/, "");
    if (denoV8Flags === "") denoV8Flags = undefined;
    applied = true;
  }
  const relaySemi = reader.text("RELAY_SEMI_SPACE_MB");
  const semiFromRelay = reader.value("RELAY_SEMI_SPACE_MB", parseIntIn(1, 1024, " number of MiB"));
  const envFlags = splitFlags(denoV8Flags);
  const cliFlags = splitFlags(cliV8Flags);

  const pick = (flag: string): { mb: number | undefined; source: GcSource } => {
    const cli = flagMb(cliFlags, flag);
    if (cli !== undefined) return { mb: cli, source: "--v8-flags" };
    const e = flagMb(envFlags, flag);
    if (e !== undefined) return { mb: e, source: "DENO_V8_FLAGS" };
    return { mb: undefined, source: "runtime default" };
  };
  let semiSpace = pick("max-semi-space-size");
  const heapCeiling = pick("max-old-space-size");
  const apply: string[] = [];
  let why: string;
  if (semiSpace.source !== "runtime default") {
    why =
      `The young generation is set by ${semiSpace.source}, the runtime's own knob, which always wins` +
      (semiFromRelay !== undefined ? `; RELAY_SEMI_SPACE_MB=${semiFromRelay} is ignored` : "") +
      ".";
  } else if (semiFromRelay !== undefined) {
    semiSpace = { mb: semiFromRelay, source: "RELAY_SEMI_SPACE_MB" };
    if (!applied) apply.push(`--max-semi-space-size=${semiFromRelay}`);
    why = `RELAY_SEMI_SPACE_MB=${semiFromRelay} sets the young generation because neither ` +
      `DENO_V8_FLAGS nor --v8-flags sets --max-semi-space-size; the relay applies it at start by ` +
      `re-executing itself with the flag added to DENO_V8_FLAGS.`;
  } else {
    why = "Neither DENO_V8_FLAGS, --v8-flags nor RELAY_SEMI_SPACE_MB sets the young generation, " +
      "so V8 sizes it itself (its semi-space grows with the heap, up to its built-in maximum).";
  }
  why += heapCeiling.source === "runtime default"
    ? " No --max-old-space-size is set, so the heap ceiling is V8's default for this host's memory."
    : ` The heap ceiling comes from ${heapCeiling.source}.`;
  return {
    inputs: { denoV8Flags, cliV8Flags, relaySemiSpaceMb: relaySemi },
    semiSpace,
    heapCeiling,
    apply,
    applied,
    why,
  };
}

/**
 * The `--v8-flags=` value this Deno process was started with, read from
 * /proc/self/cmdline (Linux); undefined when absent or not readable.
 */
export function runtimeV8FlagsArgument(): string | undefined {
  let args: string[];
  try {
    args = Deno.readTextFileSync("/proc/self/cmdline").split("\0");
  } catch {
    // No /proc (not Linux, or no permission): nothing to pass on.
    return undefined;
  }
  let found: string | undefined;
  for (const a of args) {
    if (a.startsWith("--v8-flags=")) found = a.slice("--v8-flags=".length);
    // Arguments after the script belong to the program, not to Deno.
    if (/\.(ts|js|mjs|tsx|jsx)$/.test(a) || a.startsWith("file:") || a.startsWith("jsr:")) break;
  }
  return found;
}
