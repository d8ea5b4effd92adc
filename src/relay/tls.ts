import { loadServingCertificate, type ServingCertificate } from "../certs/mod.ts";

/** The certificate the relay serves (QUIC, WebTransport and HTTPS alike). */
export type RelayTls = ServingCertificate;

/** Options of {@link loadRelayTls}. */
export interface LoadRelayTlsOptions {
  /** CERT_FILE value and whether it is the default. */
  readonly certFile: { readonly value: string; readonly source: "default" | "environment" };
  /** KEY_FILE value and whether it is the default. */
  readonly keyFile: { readonly value: string; readonly source: "default" | "environment" };
  /** Logs a line. */
  readonly log: (line: string) => void;
}

/**
 * Reads CERT_FILE/KEY_FILE, or generates a development certificate when both
 * are the defaults and missing (see `loadServingCertificate`).
 */
export function loadRelayTls(options: LoadRelayTlsOptions): Promise<RelayTls> {
  const { certFile, keyFile, log } = options;
  return loadServingCertificate({
    certFile: certFile.value,
    keyFile: keyFile.value,
    defaultCertificate: certFile.source === "default" && keyFile.source === "default",
    server: "relay",
    log: (line) => log(`relay: ${line}`),
  });
}
