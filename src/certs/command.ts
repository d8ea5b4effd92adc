import { generateDevCertificate } from "./generate.ts";
import { toBase64, toHex } from "./pem.ts";

/**
 * `sluice certs [--out-dir DIR] [--force] [--days N] [--host NAME]...`: writes
 * `server.crt` and `server.key` (default directory `certs/`) and prints the
 * certificate's SHA-256 for `serverCertificateHashes`. Returns the exit code.
 */
export async function runCertsCommand(args: string[]): Promise<number> {
  let outDir = "certs";
  let force = false;
  let days = 14;
  const hosts: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    const value = (): string => {
      const v = args[++i];
      if (v === undefined) throw new TypeError(`Option "${arg}" needs a value`);
      return v;
    };
    try {
      if (arg === "--out-dir") outDir = value();
      else if (arg.startsWith("--out-dir=")) outDir = arg.slice(10);
      else if (arg === "--force") force = true;
      else if (arg === "--days") days = Number(value());
      else if (arg.startsWith("--days=")) days = Number(arg.slice(7));
      else if (arg === "--host") hosts.push(value());
      else if (arg.startsWith("--host=")) hosts.push(arg.slice(7));
      else if (arg === "--help" || arg === "-h") {
        console.log(
          "usage: sluice certs [--out-dir DIR] [--force] [--days N (1-14)] [--host NAME]...",
        );
        return 0;
      } else throw new TypeError(`Unknown option "${arg}"`);
    } catch (err) {
      console.error(`sluice certs: ${(err as Error).message}`);
      return 2;
    }
  }
  const certPath = `${outDir}/server.crt`;
  const keyPath = `${outDir}/server.key`;
  if (!force) {
    for (const path of [certPath, keyPath]) {
      if (await exists(path)) {
        console.error(`sluice certs: "${path}" exists; pass --force to overwrite`);
        return 1;
      }
    }
  }
  let cert;
  try {
    cert = await generateDevCertificate(hosts.length ? { hosts, days } : { days });
  } catch (err) {
    console.error(`sluice certs: ${(err as Error).message}`);
    return 2;
  }
  await Deno.mkdir(outDir, { recursive: true });
  await Deno.writeTextFile(certPath, cert.certPem);
  await Deno.writeTextFile(keyPath, cert.keyPem, { mode: 0o600 });
  console.log(`wrote ${certPath} and ${keyPath} (valid until ${cert.notAfter.toISOString()})`);
  console.log(`sha256 hex:    ${toHex(cert.sha256)}`);
  console.log(`sha256 base64: ${toBase64(cert.sha256)}`);
  return 0;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
