/**
 * Development certificates for native QUIC and WebTransport
 * (`serverCertificateHashes`): ECDSA P-256, CA:FALSE, at most 14 days.
 *
 * @module
 */
export {
  certificateSha256,
  DEFAULT_DEV_HOSTS,
  type DevCertificate,
  type DevCertificateOptions,
  generateDevCertificate,
} from "./generate.ts";
export { runCertsCommand } from "./command.ts";
export { fromPem, toBase64, toHex, toPem } from "./pem.ts";
export {
  loadServingCertificate,
  type LoadServingCertificateOptions,
  type ServingCertificate,
} from "./serving.ts";
