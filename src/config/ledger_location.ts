/** Where records are stored, parsed from `LEDGER_URI`. */
export type LedgerLocation =
  | { readonly kind: "memory" }
  | {
    readonly kind: "directory";
    readonly dir: string;
    /** LEDGER_OPEN_TRACKS: most tracks keeping a file open; the backend's default when absent. */
    readonly openTracks?: number;
  }
  | { readonly kind: "postgres"; readonly url: string; readonly table: string }
  | {
    readonly kind: "s3";
    readonly bucket: string;
    readonly prefix: string;
    readonly region: string;
    readonly endpoint?: string;
  };

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * Parses a `LEDGER_URI` value. Unset or empty is memory; a bare path or an
 * unknown scheme throws `TypeError` with a message fit for the operator.
 *
 * @example
 * ```ts
 * parseLedgerUri("file:data/ledger"); // { kind: "directory", dir: "data/ledger" }
 * ```
 */
export function parseLedgerUri(uri: string | undefined): LedgerLocation {
  if (uri === undefined || uri.trim() === "") return { kind: "memory" };
  const text = uri.trim();
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(text)?.[1]?.toLowerCase();
  if (!scheme) {
    throw new TypeError(
      `"${text}" is a bare path; write file:///absolute/dir or file:relative/dir`,
    );
  }
  switch (scheme) {
    case "file":
      return { kind: "directory", dir: fileDir(text) };
    case "postgres":
    case "postgresql":
      return postgresLocation(text);
    case "s3":
      return s3Location(text);
    default:
      throw new TypeError(
        `Unsupported scheme "${scheme}:"; use file:, postgres:, s3: or leave it unset for memory`,
      );
  }
}

function fileDir(text: string): string {
  if (text.startsWith("file://")) {
    const url = new URL(text);
    if (url.host !== "" && url.host !== "localhost") {
      throw new TypeError(`"${text}" names host "${url.host}"; use file:///absolute/dir`);
    }
    const dir = decodeURIComponent(url.pathname);
    if (dir === "" || dir === "/") throw new TypeError(`"${text}" names no directory`);
    return dir;
  }
  const dir = decodeURIComponent(text.slice("file:".length));
  if (dir === "") throw new TypeError(`"${text}" names no directory`);
  return dir;
}

function postgresLocation(text: string): LedgerLocation {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(`"${text}" is not a valid postgres:// URL`);
  }
  const table = url.searchParams.get("table") ?? "ledger_objects";
  if (!IDENTIFIER.test(table)) {
    throw new TypeError(
      `table "${table}" is not a plain SQL identifier (letters, digits, underscore; at most 63)`,
    );
  }
  url.searchParams.delete("table");
  return { kind: "postgres", url: url.toString(), table };
}

function s3Location(text: string): LedgerLocation {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(`"${text}" is not a valid s3:// URL`);
  }
  const bucket = url.hostname;
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new TypeError(`"${bucket}" is not a valid bucket name`);
  }
  const prefix = decodeURIComponent(url.pathname).replace(/^\/+/, "").replace(/\/+$/, "");
  if (prefix.split("/").some((s) => s === "." || s === "..")) {
    throw new TypeError(`prefix "${prefix}" may not contain . or .. segments`);
  }
  const region = url.searchParams.get("region") ?? "us-east-1";
  const endpoint = url.searchParams.get("endpoint") ?? undefined;
  if (endpoint !== undefined && !/^https?:\/\//.test(endpoint)) {
    throw new TypeError(`endpoint "${endpoint}" must be an http:// or https:// URL`);
  }
  return endpoint === undefined
    ? { kind: "s3", bucket, prefix, region }
    : { kind: "s3", bucket, prefix, region, endpoint };
}

/** A short description of a location for the startup summary (no secrets). */
export function describeLedgerLocation(location: LedgerLocation): string {
  switch (location.kind) {
    case "memory":
      return "memory (records are lost at exit)";
    case "directory":
      return `directory ${location.dir}`;
    case "postgres": {
      const url = new URL(location.url);
      url.password = "";
      return `postgres ${url.host}${url.pathname} table ${location.table}`;
    }
    case "s3":
      return `s3 bucket ${location.bucket} prefix "${location.prefix}" region ${location.region}` +
        (location.endpoint ? ` endpoint ${location.endpoint}` : "");
  }
}

/** Object-store credentials (from STORE_ACCESS_KEY_ID and friends, read by config). */
export interface StoreCredentials {
  /** Access key id (AWS_ACCESS_KEY_ID). */
  readonly accessKeyId: string;
  /** Secret access key (AWS_SECRET_ACCESS_KEY). */
  readonly secretAccessKey: string;
  /** Session token for temporary credentials (AWS_SESSION_TOKEN). */
  readonly sessionToken?: string;
}
