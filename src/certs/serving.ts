import { certificateSha256, generateDevCertificate } from "./generate.ts";
import { toBase64, toHex } from "./pem.ts";

/** The certificate a server presents (QUIC, WebTransport and HTTPS alike). */
export interface ServingCertificate {
  /** Certificate chain, PEM. */
  readonly certPem: string;
  /** Private key, PEM. */
  readonly keyPem: string;
  /** SHA-256 of the leaf certificate (a browser's `serverCertificateHashes` value). */
  readonly sha256: Uint8Array;
  /** True when generated in memory because the default files were missing. */
  readonly generated: boolean;
}

/** Options of {@link loadServingCertificate}. */
export interface LoadServingCertificateOptions {
  /** CERT_FILE. */
  readonly certFile: string;
  /** KEY_FILE. */
  readonly keyFile: string;
  /** True when both were left at their defaults: missing files then mean "generate one". */
  readonly defaultCertificate: boolean;
  /** Who serves it, for the log line ("relay", "MoQ listener"). */
  readonly server: string;
  /** Told about a generated certificate. */
  readonly log: (line: string) => void;
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/**
 * Reads CERT_FILE and KEY_FILE. When both are the defaults and neither
 * exists, generates a development certificate in memory (so the funnel and
 * the relay run on a fresh machine) and logs its SHA-256 so browsers can pin
 * it. A missing file that was named explicitly, or only one of the two, is
 * an error naming the variable.
 */
export async function loadServingCertificate(
  options: LoadServingCertificateOptions,
): Promise<ServingCertificate> {
  const cert = await readIfExists(options.certFile);
  const key = await readIfExists(options.keyFile);
  if (cert !== undefined && key !== undefined) {
    return { certPem: cert, keyPem: key, sha256: await certificateSha256(cert), generated: false };
  }
  if (!options.defaultCertificate || cert !== undefined || key !== undefined) {
    const missing = cert === undefined
      ? `CERT_FILE "${options.certFile}"`
      : `KEY_FILE "${options.keyFile}"`;
    throw new Deno.errors.NotFound(`Cannot serve TLS: ${missing} does not exist`);
  }
  const dev = await generateDevCertificate();
  options.log(
    `${options.certFile} not found; the ${options.server} serves a generated development ` +
      `certificate valid until ${dev.notAfter.toISOString()}, sha256 ${toHex(dev.sha256)} ` +
      `(serverCertificateHashes value, base64: ${toBase64(dev.sha256)})`,
  );
  return { certPem: dev.certPem, keyPem: dev.keyPem, sha256: dev.sha256, generated: true };
}
