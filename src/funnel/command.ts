import { errorText } from "../error_text/mod.ts";
import { ConfigError } from "../config/mod.ts";
import { type Env, loadFunnelConfig } from "../config/mod.ts";
import { consoleLogger } from "../log/mod.ts";
import { startFunnel } from "./funnel.ts";

/**
 * `sluice funnel`: takes no flags or arguments; configuration comes from
 * `env` (the process environment, passed by the command line). Prints the
 * startup summary, runs until SIGINT/SIGTERM, then stops gracefully.
 * Returns the process exit code.
 */
export async function runFunnelCommand(args: readonly string[], env: Env): Promise<number> {
  if (args.length > 0) {
    console.error("sluice funnel takes no arguments; configure it with environment variables");
    return 2;
  }
  const log = consoleLogger("funnel");
  let config;
  try {
    config = loadFunnelConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  let funnel;
  try {
    funnel = await startFunnel(config, { log });
  } catch (error) {
    log.error("The funnel could not start", errorText(error));
    return 1;
  }
  for (const line of funnel.summary) console.log(line);
  await waitForSignal();
  log.info("Stopping");
  await funnel.stop();
  return 0;
}

/** Resolves on the first SIGINT or SIGTERM. */
export function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    const signals: Deno.Signal[] = ["SIGINT", "SIGTERM"];
    const handler = (): void => {
      for (const s of signals) Deno.removeSignalListener(s, handler);
      resolve();
    };
    for (const s of signals) Deno.addSignalListener(s, handler);
  });
}
