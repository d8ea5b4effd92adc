import { ConfigError } from "../config/mod.ts";
import { runtimeV8FlagsArgument } from "../config/mod.ts";
import { loadRelayConfig } from "../config/mod.ts";
import { ReexecNotAllowedError } from "./ops/mod.ts";
import { runRelay } from "./run.ts";

/**
 * `sluice relay`: reads the relay's settings from `env`, then runs it until
 * SIGINT/SIGTERM. Returns the exit code (2 for an invalid setting).
 */
export async function runRelayCommand(env: Record<string, string | undefined>): Promise<number> {
  let config;
  try {
    const cli = runtimeV8FlagsArgument();
    config = loadRelayConfig(env, cli === undefined ? {} : { cliV8Flags: cli });
  } catch (e) {
    if (e instanceof ConfigError) {
      for (const p of e.details) console.error(`sluice relay: ${p.variable} ${p.message}`);
      return 2;
    }
    throw e;
  }
  try {
    return await runRelay(config);
  } catch (e) {
    if (e instanceof ReexecNotAllowedError) {
      console.error(`sluice relay: ${e.message}`);
      return 2;
    }
    if (e instanceof ConfigError) {
      for (const p of e.details) console.error(`sluice relay: ${p.variable} ${p.message}`);
      return 2;
    }
    throw e;
  }
}
