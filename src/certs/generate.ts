import {
  bitString,
  boolean,
  explicit,
  integer,
  integerBytes,
  octetString,
  oid,
  sequence,
  set,
  time,
  tlv,
  utf8String,
} from "./der.ts";
import { parseIpAddress } from "./ip.ts";
import { fromPem, toPem } from "./pem.ts";

/** Options for {@linkcode generateDevCertificate}. */
export interface DevCertificateOptions {
  /** DNS names and IP literals for subjectAltName (default localhost, 127.0.0.1, ::1). */
  readonly hosts?: readonly string[];
  /** Validity in days, 1–14 (browsers refuse hash-pinned certificates valid longer). Default 14. */
  readonly days?: number;
  /** The issue time (default: now). */
  readonly now?: Date;
}

/** A generated development certificate. */
export interface DevCertificate {
  /** The certificate as PEM. */
  readonly certPem: string;
  /** The PKCS#8 private key as PEM. */
  readonly keyPem: string;
  /** SHA-256 of the DER certificate, for `serverCertificateHashes`. */
  readonly sha256: Uint8Array;
  /** When the certificate stops being valid. */
  readonly notAfter: Date;
}

/** The hosts a development certificate covers unless told otherwise. */
export const DEFAULT_DEV_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "::1"];

const DAY_MS = 86_400_000;
const OID_ECDSA_SHA256 = "1.2.840.10045.4.3.2";

/**
 * Makes a self-signed ECDSA P-256 leaf certificate (CA:FALSE, ≤ 14 days) that
 * browsers accept through `serverCertificateHashes` and rustls accepts as an
 * end-entity certificate.
 *
 * @example
 * ```ts
 * const { certPem, keyPem, sha256 } = await generateDevCertificate();
 * ```
 */
export async function generateDevCertificate(
  options: DevCertificateOptions = {},
): Promise<DevCertificate> {
  const hosts = options.hosts ?? DEFAULT_DEV_HOSTS;
  const days = options.days ?? 14;
  if (!Number.isFinite(days) || days <= 0 || days > 14) {
    throw new RangeError(`Cannot make a certificate valid for "${days}" days: allowed 1 to 14`);
  }
  if (hosts.length === 0) throw new RangeError("Cannot make a certificate without hosts");
  const now = options.now ?? new Date();
  // Back-date one minute so small clock differences do not reject a fresh certificate;
  // the total span stays within `days`.
  const notBefore = new Date(Math.floor(now.getTime() / 1000) * 1000 - 60_000);
  const notAfter = new Date(notBefore.getTime() + days * DAY_MS);

  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]);
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));

  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] = (serial[0] ?? 0) & 0x7f | 0x01; // positive and non-zero
  const name = sequence(set(sequence(oid("2.5.4.3"), utf8String("sluice development"))));
  const algorithm = sequence(oid(OID_ECDSA_SHA256));

  const tbs = sequence(
    explicit(0, integer(2)),
    integerBytes(serial),
    algorithm,
    name,
    sequence(time(notBefore), time(notAfter)),
    name,
    spki,
    explicit(3, sequence(...extensions(hosts))),
  );
  const raw = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, tbs),
  );
  const signature = sequence(integerBytes(raw.subarray(0, 32)), integerBytes(raw.subarray(32)));
  const der = sequence(tbs, algorithm, bitString(signature));
  return {
    certPem: toPem("CERTIFICATE", der),
    keyPem: toPem("PRIVATE KEY", pkcs8),
    sha256: new Uint8Array(await crypto.subtle.digest("SHA-256", der)),
    notAfter,
  };
}

/** SHA-256 of a PEM certificate's DER bytes (the value `serverCertificateHashes` wants). */
export async function certificateSha256(certPem: string): Promise<Uint8Array> {
  const der = fromPem("CERTIFICATE", certPem);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", der));
}

function extension(id: string, critical: boolean, value: Uint8Array): Uint8Array {
  return critical
    ? sequence(oid(id), boolean(true), octetString(value))
    : sequence(oid(id), octetString(value));
}

function extensions(hosts: readonly string[]): Uint8Array[] {
  const names = hosts.map((host) => {
    const ip = parseIpAddress(host);
    return ip ? tlv(0x87, ip) : tlv(0x82, new TextEncoder().encode(host));
  });
  return [
    // basicConstraints: empty SEQUENCE = cA FALSE (the DER default is omitted).
    extension("2.5.29.19", true, sequence()),
    // keyUsage: digitalSignature.
    extension("2.5.29.15", true, bitString(new Uint8Array([0x80]), 7)),
    // extKeyUsage: serverAuth, clientAuth.
    extension(
      "2.5.29.37",
      false,
      sequence(oid("1.3.6.1.5.5.7.3.1"), oid("1.3.6.1.5.5.7.3.2")),
    ),
    extension("2.5.29.17", false, sequence(...names)),
  ];
}
