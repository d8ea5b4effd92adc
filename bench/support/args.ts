/**
 * The one command-line parser of the bench scripts: node:util `parseArgs`
 * on `Deno.args`, strict (an unknown flag is a TypeError naming it, with the
 * usage), with
 * `--help` printing the script's usage and exiting.
 *
 * @example
 * ```ts
 * const { values } = benchArgs({
 *   seconds: { type: "string", default: "5" },
 *   json: { type: "boolean", default: false },
 * }, { usage: "deno run -A bench/x.ts [--seconds S] [--json]" });
 * const seconds = Number(values.seconds);
 * ```
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

/** The flags of one script, as node:util `parseArgs` takes them. */
export type BenchFlags = NonNullable<ParseArgsConfig["options"]>;

/** How {@link benchArgs} reads the command line. */
export interface BenchArgsConfig {
  /** Printed for `--help` (default: the flags and their defaults). */
  readonly usage?: string;
  /** Arguments to parse (default `Deno.args`). */
  readonly args?: readonly string[];
  /** Whether bare words are taken as positionals (default false). */
  readonly allowPositionals?: boolean;
}

/** What {@link benchArgs} returns: parsed `values` and `positionals`. */
export type BenchArgs<F extends BenchFlags> = ReturnType<
  typeof parseArgs<{ options: F; allowPositionals: true }>
>;

/** Parses a bench script's command line against `flags`. */
export function benchArgs<const F extends BenchFlags>(
  flags: F,
  config: BenchArgsConfig = {},
): BenchArgs<F> {
  const args = [...(config.args ?? Deno.args)];
  if (args.includes("--help") || args.includes("-h")) {
    console.log(config.usage ?? usageOf(flags));
    Deno.exit(0);
  }
  try {
    const parsed = parseArgs({
      args,
      options: flags,
      allowPositionals: config.allowPositionals ?? false,
      strict: true,
    });
    return parsed as unknown as BenchArgs<F>;
  } catch (e) {
    const usage = config.usage ?? usageOf(flags);
    const unknown = /^Unknown option '([^']+)'/.exec((e as Error).message);
    if (unknown) throw new TypeError(`Unknown argument "${unknown[1]}"\n\n${usage}`);
    throw new TypeError(`${(e as Error).message}\n\n${usage}`);
  }
}

/** The flags and their defaults, one a line. */
export function usageOf(flags: BenchFlags): string {
  const lines = Object.entries(flags).map(([name, f]) => {
    const value = f.type === "boolean" ? "" : ` <${f.multiple ? "value, repeatable" : "value"}>`;
    const fallback = f.default === undefined || f.default === "" || f.default === false
      ? ""
      : `  (default ${Array.isArray(f.default) ? f.default.join(",") : String(f.default)})`;
    return `  --${name}${value}${fallback}`;
  });
  return `Options:\n${lines.join("\n")}`;
}
