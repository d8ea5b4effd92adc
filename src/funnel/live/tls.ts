import { loadServingCertificate, type ServingCertificate } from "../../certs/mod.ts";

/** The certificate the funnel's own MoQ listener serves. */
export type ListenerTls = ServingCertificate;

/** Options of {@linkcode loadListenerTls}. */
export interface LoadListenerTlsOptions {
  /** CERT_FILE. */
  readonly certFile: string;
  /** KEY_FILE. */
  readonly keyFile: string;
  /** True when both were left at their defaults: missing files then mean "generate one". */
  readonly defaultCertificate: boolean;
  /** Told about a generated certificate. */
  readonly log: (line: string) => void;
}

/**
 * Reads CERT_FILE and KEY_FILE, or generates a development certificate when
 * both are the defaults and missing (see `loadServingCertificate`).
 */
export function loadListenerTls(options: LoadListenerTlsOptions): Promise<ListenerTls> {
  return loadServingCertificate({ ...options, server: "MoQ listener" });
}
