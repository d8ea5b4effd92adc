import { SluiceError } from "../errors/mod.ts";
import { errorText } from "../error_text/mod.ts";
import { exportJWK, generateKeyPair } from "jose";
import { ed25519Thumbprint, parseKeySet } from "./key_set.ts";
import { pathProblem, prefixCovers } from "../path/mod.ts";
import { parsePathAuth, parseScope, type PathAuth, type Scope } from "./scope.ts";
import { readSigner, type TokenClaims } from "./sign.ts";
import { MAX_LIFETIME_SECONDS } from "./claims.ts";
import { ClaimsError } from "./errors.ts";

/** Where `runAuthCommand` writes, and its clock; tests pass their own. */
export interface AuthCommandIo {
  /** Receives normal output (the credential, a summary). */
  stdout?: (text: string) => void;
  /** Receives errors and warnings. */
  stderr?: (text: string) => void;
  /** Current time in milliseconds since the epoch (default Date.now). */
  now?: () => number;
}

const USAGE = `Usage:
  sluice auth keygen [--prefix P] [--out key.jwk] [--keys keys.json]
      Write a new private Ed25519 key (mode 0600, never overwritten) and add its
      public half to a key set file (created if missing). --prefix confines every
      path a credential signed with the key may grant.
  sluice auth token --key key.jwk (--scope ACTIONS:BROADCAST[:TRACK] ... | --path-auth root=R[,pub=P][,sub=S])
                    [--sub S] [--ttl 1h] [--jti ID] [--aud A] [--iss I]
      Print a credential. ACTIONS is a comma-separated list of post, fetch,
      redact, publish, subscribe, peer (peer: another relay of the mesh, which
      may announce and subscribe there). A BROADCAST ending in /** is a prefix
      (room/** covers room and everything beneath it; ** covers everything).
      --ttl is seconds or a number with s, m or h; at most 1h (default 1h).
      --aud and --iss set the audience and issuer a relay or funnel configured
      with SLUICE_AUTH_AUDIENCE / SLUICE_AUTH_ISSUER requires.
`;

/** A wrong command line: printed with the usage. */
export class UsageError extends SluiceError {
  /** The codes this class carries. */
  static readonly codes = ["invalid_usage"] as const;
  /** Stable code. */
  declare readonly code: "invalid_usage";
  /** Makes the error. */
  constructor(message: string) {
    super("invalid_usage", message);
  }
}

interface ParsedFlags {
  values: Map<string, string[]>;
}

function parseFlags(args: string[], known: Record<string, "one" | "many">): ParsedFlags {
  const values = new Map<string, string[]>();
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (!arg.startsWith("--")) throw new UsageError(`Unexpected argument "${arg}"`);
    const equals = arg.indexOf("=");
    const name = equals === -1 ? arg.slice(2) : arg.slice(2, equals);
    const kind = known[name];
    if (kind === undefined) throw new UsageError(`Unknown option "--${name}"`);
    let value: string;
    if (equals !== -1) {
      value = arg.slice(equals + 1);
    } else {
      const next = args[index + 1];
      if (next === undefined || next.startsWith("--")) {
        throw new UsageError(`Option "--${name}" needs a value`);
      }
      value = next;
      index++;
    }
    const list = values.get(name) ?? [];
    if (kind === "one" && list.length > 0) {
      throw new UsageError(`Option "--${name}" is given twice`);
    }
    list.push(value);
    values.set(name, list);
  }
  return { values };
}

function one(flags: ParsedFlags, name: string): string | undefined {
  return flags.values.get(name)?.[0];
}

/**
 * Runs `sluice auth <keygen|token> ...`; returns the exit status: 0 on
 * success, 2 on bad usage, 1 when the work itself fails (a file exists, a
 * key cannot be read).
 */
export async function runAuthCommand(args: string[], io: AuthCommandIo = {}): Promise<number> {
  const stdout = io.stdout ?? ((text: string) => Deno.stdout.writeSync(encode(text)));
  const stderr = io.stderr ?? ((text: string) => Deno.stderr.writeSync(encode(text)));
  const [command, ...rest] = args;
  try {
    switch (command) {
      case "keygen":
        return await keygen(rest, stdout);
      case "token":
        return await token(rest, stdout, stderr, io.now ?? Date.now);
      case "help":
      case "--help":
      case "-h":
        stdout(USAGE);
        return 0;
      case undefined:
        throw new UsageError("Missing subcommand (keygen or token)");
      default:
        throw new UsageError(`Unknown subcommand "${command}" (expected keygen or token)`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      stderr(`sluice auth: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    stderr(`sluice auth ${command}: ${errorText(error)}\n`);
    return 1;
  }
}

function encode(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

async function keygen(args: string[], stdout: (text: string) => void): Promise<number> {
  if (args.includes("--help")) {
    stdout(USAGE);
    return 0;
  }
  const flags = parseFlags(args, { prefix: "one", out: "one", keys: "one" });
  const prefix = one(flags, "prefix") ?? "";
  const problem = pathProblem(prefix, true);
  if (problem !== undefined) throw new UsageError(`Prefix "${prefix}" ${problem}`);
  const out = one(flags, "out") ?? "key.jwk";
  const keysPath = one(flags, "keys") ?? "keys.json";
  if (out === keysPath) throw new UsageError("--out and --keys name the same file");

  // Read the set first: a set we would refuse to extend must stop us before a key is written.
  let document: { keys: unknown[] } & Record<string, unknown> = { keys: [] };
  let existing: string | undefined;
  try {
    existing = await Deno.readTextFile(keysPath);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      throw new Error(`Cannot read key set ${keysPath}: ${(error as Error).message}`);
    }
  }
  if (existing !== undefined) {
    try {
      await parseKeySet(existing);
    } catch (error) {
      throw new Error(
        `Key set ${keysPath} is refused, not extending it: ${(error as Error).message}`,
      );
    }
    document = JSON.parse(existing);
  }

  const { privateKey } = await generateKeyPair("EdDSA", { extractable: true });
  const exported = await exportJWK(privateKey);
  const x = exported.x!;
  const kid = await ed25519Thumbprint(x);
  const privateJwk: Record<string, string> = { kty: "OKP", crv: "Ed25519", x, d: exported.d!, kid };
  privateJwk.alg = "EdDSA";
  const publicJwk: Record<string, string> = { kty: "OKP", crv: "Ed25519", x, kid };
  if (prefix !== "") {
    privateJwk.prefix = prefix;
    publicJwk.prefix = prefix;
  }

  let file: Deno.FsFile;
  try {
    file = await Deno.open(out, { write: true, createNew: true, mode: 0o600 });
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) {
      throw new Error(`Refusing to overwrite the existing key file ${out}`);
    }
    throw new Error(`Cannot create key file ${out}: ${(error as Error).message}`);
  }
  try {
    await file.write(encode(`${JSON.stringify(privateJwk, null, 2)}\n`));
  } finally {
    file.close();
  }
  // The mode given to open is narrowed by the umask; make sure it is exactly owner-only.
  if (Deno.build.os !== "windows") await Deno.chmod(out, 0o600);

  document.keys.push(publicJwk);
  const temporary = `${keysPath}.${crypto.randomUUID()}.tmp`;
  try {
    await Deno.writeTextFile(temporary, `${JSON.stringify(document, null, 2)}\n`);
    await Deno.rename(temporary, keysPath);
  } catch (error) {
    // Best-effort cleanup of the half-written files; the write error is rethrown below.
    await Deno.remove(temporary).catch(() => {});
    await Deno.remove(out).catch(() => {});
    throw new Error(`Cannot write key set ${keysPath}: ${(error as Error).message}`);
  }
  stdout(
    `Wrote private key ${out} (kid ${kid}${prefix === "" ? "" : `, prefix ${prefix}`}); ` +
      `${existing === undefined ? "created" : "added its public key to"} key set ${keysPath}\n`,
  );
  return 0;
}

/** Reads `ACTIONS:BROADCAST[:TRACK]` into a scope; a broadcast ending in `/**` is a prefix. */
export function parseScopeArgument(text: string): Scope {
  const first = text.indexOf(":");
  if (first === -1) throw new UsageError(`Scope "${text}" is not ACTIONS:BROADCAST[:TRACK]`);
  const actions = text.slice(0, first).split(",").map((action) => action.trim());
  const rest = text.slice(first + 1);
  const second = rest.indexOf(":");
  const broadcast = second === -1 ? rest : rest.slice(0, second);
  const track = second === -1 ? undefined : rest.slice(second + 1);
  let match: { exact: string } | { prefix: string };
  if (broadcast === "**") match = { prefix: "" };
  else if (broadcast.endsWith("/**")) match = { prefix: broadcast.slice(0, -3) };
  else if (broadcast.includes("*")) {
    throw new UsageError(`Scope "${text}": only a trailing "/**" marks a prefix`);
  } else match = { exact: broadcast };
  try {
    return parseScope(
      track === undefined
        ? { actions, broadcast: match }
        : { actions, broadcast: match, track: { exact: track } },
      `Scope "${text}":`,
    );
  } catch (error) {
    if (!(error instanceof ClaimsError)) throw error;
    throw new UsageError(error.message.replace(":.", ":"));
  }
}

function parsePathAuthArgument(text: string): PathAuth {
  const value: Record<string, string> = {};
  for (const part of text.split(",")) {
    const equals = part.indexOf("=");
    if (equals === -1) throw new UsageError(`--path-auth "${text}" is not root=R[,pub=P][,sub=S]`);
    const name = part.slice(0, equals).trim();
    if (name in value) throw new UsageError(`--path-auth names "${name}" twice`);
    value[name] = part.slice(equals + 1);
  }
  try {
    return parsePathAuth(value, "--path-auth");
  } catch (error) {
    if (!(error instanceof ClaimsError)) throw error;
    throw new UsageError(error.message);
  }
}

/** Reads a TTL: seconds, or a number with s, m or h; 1 s .. 1 h. */
export function parseTtl(text: string): number {
  const match = /^(\d+)(s|m|h)?$/.exec(text.trim());
  if (match === null) throw new UsageError(`TTL "${text}" is not like 90, 90s, 15m or 1h`);
  const unit = match[2] === "h" ? 3600 : match[2] === "m" ? 60 : 1;
  const seconds = Number(match[1]) * unit;
  if (seconds < 1 || seconds > MAX_LIFETIME_SECONDS) {
    throw new UsageError(`TTL "${text}" is not between 1s and 1h`);
  }
  return seconds;
}

async function token(
  args: string[],
  stdout: (text: string) => void,
  stderr: (text: string) => void,
  now: () => number,
): Promise<number> {
  if (args.includes("--help")) {
    stdout(USAGE);
    return 0;
  }
  const flags = parseFlags(args, {
    key: "one",
    scope: "many",
    "path-auth": "one",
    sub: "one",
    ttl: "one",
    jti: "one",
    aud: "one",
    iss: "one",
  });
  const keyPath = one(flags, "key");
  if (keyPath === undefined) throw new UsageError("Option --key is required");
  const scopeArgs = flags.values.get("scope") ?? [];
  const pathAuthArg = one(flags, "path-auth");
  if (scopeArgs.length > 0 && pathAuthArg !== undefined) {
    throw new UsageError("Give --scope or --path-auth, not both");
  }
  if (scopeArgs.length === 0 && pathAuthArg === undefined) {
    throw new UsageError("Give at least one --scope (or --path-auth)");
  }
  const claims: TokenClaims = {};
  if (pathAuthArg !== undefined) claims.path_auth = parsePathAuthArgument(pathAuthArg);
  else claims.scopes = scopeArgs.map(parseScopeArgument);
  const sub = one(flags, "sub");
  if (sub !== undefined) {
    if (sub === "") throw new UsageError("--sub is empty");
    claims.sub = sub;
  }
  const jti = one(flags, "jti");
  if (jti !== undefined) claims.jti = jti;
  for (const name of ["aud", "iss"] as const) {
    const value = one(flags, name);
    if (value === "") throw new UsageError(`--${name} is empty`);
    if (value !== undefined) claims[name] = value;
  }
  const ttl = parseTtl(one(flags, "ttl") ?? "1h");

  const signer = await readSigner(keyPath);
  if (signer.prefix !== undefined && claims.scopes !== undefined) {
    for (const scope of claims.scopes) {
      const path = "exact" in scope.broadcast ? scope.broadcast.exact : scope.broadcast.prefix;
      if (!prefixCovers(signer.prefix, path)) {
        stderr(
          `warning: broadcast "${path}" lies outside the key's prefix "${signer.prefix}"; ` +
            `it grants nothing there\n`,
        );
      }
    }
  }
  stdout(`${await signer.sign(claims, { ttlSeconds: ttl, now })}\n`);
  return 0;
}
