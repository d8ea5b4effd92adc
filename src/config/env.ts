import { errorText } from "../error_text/mod.ts";
import { ConfigError, type ConfigProblem } from "./errors.ts";

/** An environment snapshot: variable name to value. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Where a setting's value came from. */
export type SettingSource = "default" | "environment";

/** One resolved setting, kept with its source so `sluice doctor` can say where it came from. */
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

/** A value with surrounding white space removed; undefined when absent or blank. */
export function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/**
 * Reads an environment once, collecting every bad variable instead of
 * stopping at the first: parsers throw (a message quoting the bad value),
 * the reader records `VARIABLE: message`, and {@link EnvReader.finish}
 * throws one {@link ConfigError} listing them all.
 *
 * @example
 * ```ts
 * const reader = new EnvReader({ PORT: "x" });
 * const port = reader.value("PORT", Number.parseInt);
 * reader.finish(); // throws when a parser threw
 * ```
 */
export class EnvReader {
  readonly #env: Env;
  readonly #problems: ConfigProblem[] = [];

  /** Reads from `env`. */
  constructor(env: Env) {
    this.#env = env;
  }

  /** The variable's value, trimmed; undefined when unset or blank. */
  text(name: string): string | undefined {
    return nonEmpty(this.#env[name]);
  }

  /** The parsed value when the variable is set; undefined when unset or when `parse` threw. */
  value<T>(name: string, parse: (text: string) => T): T | undefined {
    const text = this.text(name);
    if (text === undefined) return undefined;
    try {
      return parse(text);
    } catch (error) {
      this.problem(name, errorText(error));
      return undefined;
    }
  }

  /**
   * The setting with its source: the parsed value when set, else `fallback`.
   * `show` renders the value for display (default: its text, `(unset)` for undefined).
   */
  setting<T>(
    name: string,
    fallback: T,
    parse: (text: string) => T,
    show?: (value: T) => string,
  ): Setting<T> {
    const text = this.text(name);
    const value = text === undefined ? fallback : (this.value(name, parse) ?? fallback);
    const display = show ? show(value) : value === undefined ? "(unset)" : String(value);
    return {
      variable: name,
      value,
      source: text === undefined ? "default" : "environment",
      display,
    };
  }

  /** Records a problem with a variable. */
  problem(name: string, message: string): void {
    this.#problems.push({ variable: name, message });
  }

  /** Throws a {@link ConfigError} listing every recorded problem, if any. */
  finish(): void {
    if (this.#problems.length > 0) throw new ConfigError([...this.#problems]);
  }
}
