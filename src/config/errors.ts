import { errorText } from "../errors/mod.ts";

/** Configuration problems found at startup, each naming its variable. */
export class ConfigError extends Error {
  /** One line per problem: `VARIABLE: what is wrong`. */
  readonly problems: readonly string[];

  /** Collects every problem so the operator can fix them in one go. */
  constructor(problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/** An environment snapshot: variable name to value. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Collects per-variable parse failures: `read("X", parse)` returns the
 * parsed value or undefined, recording `X: message` for a thrown error.
 */
export class ProblemCollector {
  readonly #problems: string[] = [];

  /** Parses the variable's value when set (non-empty); records a failure. */
  read<T>(env: Env, name: string, parse: (value: string) => T): T | undefined {
    const value = env[name];
    if (value === undefined || value.trim() === "") return undefined;
    try {
      return parse(value.trim());
    } catch (error) {
      this.add(name, errorText(error));
      return undefined;
    }
  }

  /** Records a problem with a variable. */
  add(name: string, message: string): void {
    this.#problems.push(`${name}: ${message}`);
  }

  /** Throws a {@link ConfigError} when any problem was recorded. */
  throwIfAny(): void {
    if (this.#problems.length > 0) throw new ConfigError(this.#problems);
  }
}

/** Parses a boolean variable: true/false, 1/0, yes/no. */
export function parseBoolean(value: string): boolean {
  const v = value.toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  throw new TypeError(`"${value}" is not a boolean (use true or false)`);
}
