import { SluiceError } from "../errors/mod.ts";

/** One bad setting: the variable and what is wrong with its value. */
export interface ConfigProblem {
  /** The environment variable at fault. */
  readonly variable: string;
  /** What is wrong, quoting the bad value, without repeating the variable. */
  readonly message: string;
}

/** Configuration problems found at startup, each naming its variable. */
export class ConfigError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["invalid_config"] as const;
  /** Stable code for callers. */
  declare readonly code: "invalid_config";
  /** The first variable at fault. */
  readonly variable: string;
  /** One line per problem: `VARIABLE: what is wrong`. */
  readonly problems: readonly string[];
  /** The same problems with variable and message apart, for callers that word them their way. */
  readonly details: readonly ConfigProblem[];

  /** Collects every problem so the operator can fix them in one go. */
  constructor(details: readonly ConfigProblem[]) {
    const problems = details.map((d) => `${d.variable}: ${d.message}`);
    super("invalid_config", `Invalid configuration:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.variable = details[0]?.variable ?? "";
    this.problems = problems;
    this.details = details;
  }
}
