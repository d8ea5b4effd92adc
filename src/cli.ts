/**
 * The `sluice` command: one entry point with subcommands.
 *
 * ```sh
 * deno run -A jsr:@sluice/sluice/cli funnel
 * ```
 *
 * @module
 */
import denoJson from "../deno.json" with { type: "json" };

/** A subcommand: a one-line description and a lazy runner returning the exit code. */
interface Command {
  readonly summary: string;
  readonly run: (args: string[]) => Promise<number>;
}

// Each command loads only its own modules, so `sluice auth token` never opens QUIC.
const COMMANDS: Record<string, Command> = {
  funnel: {
    summary: "Run the HTTP-to-MoQ funnel (configured by environment variables)",
    run: async (args) =>
      (await import("./funnel/mod.ts")).runFunnelCommand(args, Deno.env.toObject()),
  },
  relay: {
    summary:
      "Run the MoQ relay (native QUIC and WebTransport; configured by environment variables)",
    run: async () => (await import("./relay/mod.ts")).runRelayCommand(Deno.env.toObject()),
  },
  doctor: {
    summary: "Print the relay's effective runtime configuration, with reasons (read-only)",
    run: async () => {
      const { runDoctor } = await import("./relay/mod.ts");
      return runDoctor(Deno.env.toObject(), (line) => console.log(line));
    },
  },
  auth: {
    summary: "Credentials: `auth keygen` makes a signing key, `auth token` prints a credential",
    run: async (args) => (await import("./auth/mod.ts")).runAuthCommand(args),
  },
  certs: {
    summary: "Write a development TLS certificate (usable with serverCertificateHashes)",
    run: async (args) => (await import("./certs/mod.ts")).runCertsCommand(args),
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) =>
    `  ${name.padEnd(width)}  ${c.summary}`
  );
  return `sluice ${denoJson.version}\n\nUsage: sluice <command> [args]\n\nCommands:\n${
    lines.join("\n")
  }\n  help${" ".repeat(width - 4)}  Show this text`;
}

/** Runs the command line `args` and returns the exit code. */
export async function main(args: readonly string[]): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    console.log(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "version") {
    console.log(denoJson.version);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`Unknown command "${name}".\n\n${usage()}`);
    return 2;
  }
  return await command.run(rest);
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
