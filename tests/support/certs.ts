// The one development certificate of a test process (localhost and 127.0.0.1),
// in memory for in-process servers and as PEM files for spawned ones.
import { type DevCertificate, generateDevCertificate } from "../../src/certs/mod.ts";

let certificate: Promise<DevCertificate> | undefined;

/** One development certificate per test process, made on first use. */
export function testCertificate(): Promise<DevCertificate> {
  return certificate ??= generateDevCertificate();
}

/** Where {@linkcode testCertificateFiles} wrote the certificate. */
export interface CertificateFiles {
  /** A fresh temporary directory; the caller removes it. */
  readonly dir: string;
  /** `<dir>/cert.pem`. */
  readonly cert: string;
  /** `<dir>/key.pem`. */
  readonly key: string;
}

/** Writes the test certificate and its key as PEM files in a fresh temporary directory. */
export async function testCertificateFiles(): Promise<CertificateFiles> {
  const c = await testCertificate();
  const dir = await Deno.makeTempDir({ prefix: "sluice-cert-" });
  const files = { dir, cert: `${dir}/cert.pem`, key: `${dir}/key.pem` };
  await Deno.writeTextFile(files.cert, c.certPem);
  await Deno.writeTextFile(files.key, c.keyPem);
  return files;
}
