/**
 * The relay's configuration: every setting parsed from the environment once,
 * validated with messages naming the variable, and kept with its source so
 * `sluice doctor` can say where each value came from. The same resolution
 * feeds relay startup, so the two cannot disagree.
 *
 * @module
 */

/** Where a setting's value came from. */
export type SettingSource = "default" | "environment";

/** One resolved setting. */
export interface Setting<T> {
  /** The environment variable that controls it. */
  readonly variable: string;
  /** The effective value. */
  readonly value: T;
  /** Default or environment. */
  readonly source: SettingSource;
  /** The value as text for display. */
  readonly display: string;
}

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

/** The relay's listen address. */
export interface ListenAddr {
  /** Interface to bind ("0.0.0.0" for all). */
  readonly hostname: string;
  /** Port (UDP for MoQ, TCP for HTTP). */
  readonly port: number;
}

/** Everything the relay needs from its environment. */
export interface RelayConfig {
  /** RELAY_ADDR. */
  readonly addr: Setting<ListenAddr>;
  /** CERT_FILE. */
  readonly certFile: Setting<string>;
  /** KEY_FILE. */
  readonly keyFile: Setting<string>;
  /** SLUICE_AUTH_KEYS: file path or https URL of the key set; undefined admits every session. */
  readonly authKeys: Setting<string | undefined>;
  /** SLUICE_AUTH_KEYS_CACHE: where the last good remote key set is kept. */
  readonly authKeysCache: Setting<string | undefined>;
  /** SLUICE_RELAY_TOKEN: bearer token for fetching a remote key set (never displayed). */
  readonly relayToken: Setting<string | undefined>;
  /** GROUP_CACHE_SIZE: complete groups kept per track. */
  readonly groupCacheSize: Setting<number>;
  /** RELAY_PPROF: expose /debug/pprof/*. */
  readonly pprof: Setting<boolean>;
  /** CORS_ALLOWED_ORIGINS: browser origins allowed to open WebTransport and read HTTP; "*" = any. */
  readonly corsAllowedOrigins: Setting<readonly string[] | "*">;
  /** The garbage-collector resolution. */
  readonly gc: GcResolution;
}

/** A relay setting that cannot be used; `variable` names the culprit. */
export class RelayConfigError extends Error {
  /** Stable code for callers. */
  readonly code = "invalid_config";
  /** The environment variable at fault. */
  readonly variable: string;

  /** Creates the error for `variable`. */
  constructor(variable: string, message: string) {
    super(message);
    this.name = "RelayConfigError";
    this.variable = variable;
  }
}

/** Marker the relay sets on its re-executed child: the flags it appended to DENO_V8_FLAGS. */
export const APPLIED_V8_FLAGS_VARIABLE = "SLUICE_RELAY_APPLIED_V8_FLAGS";

/** Defaults, for documentation and doctor. */
export const RELAY_DEFAULTS = {
  RELAY_ADDR: ":4433",
  CERT_FILE: "certs/server.crt",
  KEY_FILE: "certs/server.key",
  GROUP_CACHE_SIZE: 8,
  RELAY_PPROF: false,
  CORS_ALLOWED_ORIGINS: "*",
} as const;

type Env = Record<string, string | undefined>;

function raw(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

function setting<T>(
  variable: string,
  env: Env,
  def: T,
  parse: (s: string) => T,
  show?: (v: T) => string,
): Setting<T> {
  const r = raw(env, variable);
  const value = r === undefined ? def : parse(r);
  const display = show ? show(value) : value === undefined ? "(unset)" : String(value);
  return { variable, value, source: r === undefined ? "default" : "environment", display };
}

/** Parses `host:port`, `:port` or `[v6]:port`. */
export function parseListenAddr(text: string, variable = "RELAY_ADDR"): ListenAddr {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]]*)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new RelayConfigError(
      variable,
      `${variable} must be host:port, :port or [ipv6]:port with a port 0..65535, got "${text}"`,
    );
  }
  const hostname = m[1] ?? (m[2] === "" || m[2] === undefined ? "0.0.0.0" : m[2]);
  return { hostname, port };
}

function intIn(variable: string, min: number, max: number, unit = ""): (s: string) => number {
  return (s) => {
    if (!/^\d+$/.test(s) || Number(s) < min || Number(s) > max) {
      throw new RelayConfigError(
        variable,
        `${variable} must be an integer${unit} between ${min} and ${max}, got "${s}"`,
      );
    }
    return Number(s);
  };
}

function bool(variable: string): (s: string) => boolean {
  return (s) => {
    const v = s.toLowerCase();
    if (v === "1" || v === "true" || v === "yes" || v === "on") return true;
    if (v === "0" || v === "false" || v === "no" || v === "off") return false;
    throw new RelayConfigError(variable, `${variable} must be 1 or 0 (true or false), got "${s}"`);
  };
}

function origins(s: string): readonly string[] | "*" {
  const list = s.split(",").map((o) => o.trim()).filter((o) => o !== "");
  if (list.includes("*")) return "*";
  for (const o of list) {
    let u: URL | undefined;
    try {
      u = new URL(o);
    } catch {
      // Not a URL: reported as an invalid origin below.
      u = undefined;
    }
    if (
      !u || u.origin !== o.replace(/\/$/, "") || (u.protocol !== "https:" && u.protocol !== "http:")
    ) {
      throw new RelayConfigError(
        "CORS_ALLOWED_ORIGINS",
        `CORS_ALLOWED_ORIGINS must be "*" or a comma-separated list of origins like https://app.example, got "${o}"`,
      );
    }
  }
  return list.map((o) => o.replace(/\/$/, ""));
}

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
  const appliedMarker = raw(env, APPLIED_V8_FLAGS_VARIABLE);
  let denoV8Flags = raw(env, "DENO_V8_FLAGS");
  let applied = false;
  if (
    appliedMarker !== undefined && denoV8Flags !== undefined && denoV8Flags.endsWith(appliedMarker)
  ) {
    // This is the relay's own re-executed child: report the operator's input, not ours.
    denoV8Flags = denoV8Flags.slice(0, denoV8Flags.length - appliedMarker.length).replace(/,$/, "");
    if (denoV8Flags === "") denoV8Flags = undefined;
    applied = true;
  }
  const relaySemi = raw(env, "RELAY_SEMI_SPACE_MB");
  const semiFromRelay = relaySemi === undefined
    ? undefined
    : intIn("RELAY_SEMI_SPACE_MB", 1, 1024, " number of MiB")(relaySemi);
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

/** Options for {@link loadRelayConfig}. */
export interface LoadRelayConfigOptions {
  /** The runtime's `--v8-flags=` value (see {@link runtimeV8FlagsArgument}). */
  readonly cliV8Flags?: string;
}

/**
 * Parses and validates the relay's environment.
 *
 * @example
 * ```ts
 * const config = loadRelayConfig(Deno.env.toObject(), { cliV8Flags: runtimeV8FlagsArgument() });
 * ```
 */
export function loadRelayConfig(env: Env, options: LoadRelayConfigOptions = {}): RelayConfig {
  const show = (v: string | undefined): string => v ?? "(unset)";
  return {
    addr: setting(
      "RELAY_ADDR",
      env,
      parseListenAddr(RELAY_DEFAULTS.RELAY_ADDR),
      (s) => parseListenAddr(s),
      (a) => `${a.hostname.includes(":") ? `[${a.hostname}]` : a.hostname}:${a.port}`,
    ),
    certFile: setting("CERT_FILE", env, RELAY_DEFAULTS.CERT_FILE, (s) => s),
    keyFile: setting("KEY_FILE", env, RELAY_DEFAULTS.KEY_FILE, (s) => s),
    authKeys: setting<string | undefined>("SLUICE_AUTH_KEYS", env, undefined, (s) => {
      if (
        /^[a-z][a-z0-9+.-]*:\/\//i.test(s) && !s.startsWith("https://") && !s.startsWith("http://")
      ) {
        throw new RelayConfigError(
          "SLUICE_AUTH_KEYS",
          `SLUICE_AUTH_KEYS must be a file path or an https URL, got "${s}"`,
        );
      }
      return s;
    }, (v) => v ?? "(unset: every session is admitted)"),
    authKeysCache: setting<string | undefined>(
      "SLUICE_AUTH_KEYS_CACHE",
      env,
      undefined,
      (s) => s,
      show,
    ),
    relayToken: setting<string | undefined>(
      "SLUICE_RELAY_TOKEN",
      env,
      undefined,
      (s) => s,
      (v) => (v === undefined ? "(unset)" : "(set, hidden)"),
    ),
    groupCacheSize: setting(
      "GROUP_CACHE_SIZE",
      env,
      RELAY_DEFAULTS.GROUP_CACHE_SIZE,
      intIn("GROUP_CACHE_SIZE", 1, 1024, " number of groups"),
    ),
    pprof: setting(
      "RELAY_PPROF",
      env,
      RELAY_DEFAULTS.RELAY_PPROF,
      bool("RELAY_PPROF"),
      (v) => (v ? "1 (profiling endpoints on)" : "0 (off)"),
    ),
    corsAllowedOrigins: setting<readonly string[] | "*">(
      "CORS_ALLOWED_ORIGINS",
      env,
      "*",
      origins,
      (v) => (v === "*" ? "* (any origin)" : v.join(",")),
    ),
    gc: resolveGc(env, options.cliV8Flags),
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
