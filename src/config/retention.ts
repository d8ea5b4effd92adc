import { normalizePath, pathProblem, prefixCovers } from "../path/mod.ts";

/**
 * How much of a track the ledger keeps. Every limit set applies (a record
 * goes once any one says so); none set keeps everything. The newest record
 * of a track is always kept.
 */
export interface RetentionPolicy {
  /** Records committed longer ago than this go, ms. */
  readonly maxAgeMs?: number;
  /** Only this many newest records stay. */
  readonly maxCount?: number;
  /** Only the newest records whose payloads total at most this many bytes stay. */
  readonly maxBytes?: number;
  /**
   * Compaction by key: the name of a top-level field of a record's JSON
   * object payload whose value (a string or a number) is the record's key;
   * history keeps only the newest record of each key. Live subscribers still
   * receive every record.
   */
  readonly compactKey?: string;
}

/** One rule: tracks of broadcasts under `prefix` keep `policy`. */
export interface RetentionRule {
  /** A canonical broadcast path prefix (`chat`, `sensors/berlin`), segment-aware. */
  readonly prefix: string;
  /** What those tracks keep. */
  readonly policy: RetentionPolicy;
}

/** The retention settings: a default and rules by broadcast prefix (longest prefix wins). */
export interface RetentionConfig {
  /** LEDGER_RETENTION: for tracks no rule covers. */
  readonly default: RetentionPolicy;
  /** LEDGER_RETENTION_RULES. */
  readonly rules: readonly RetentionRule[];
  /** LEDGER_RETENTION_INTERVAL: time between retention passes, ms. */
  readonly intervalMs: number;
}

/** Default time between retention passes (LEDGER_RETENTION_INTERVAL), ms. */
export const DEFAULT_RETENTION_INTERVAL_MS = 60_000;

/** Keeps everything: the shipped default, since removing records cannot be undone. */
export const KEEP_FOREVER: RetentionPolicy = {};

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const BYTE_UNITS: Record<string, number> = {
  B: 1,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
  TiB: 1024 ** 4,
};

/**
 * Parses a policy: `forever`, or limits separated by spaces or commas,
 * each `age=<n><ms|s|m|h|d>`, `count=<n>`, `bytes=<n><B|KiB|MiB|GiB|TiB>`
 * or `compact=<field>` (compaction by the payload's top-level `field`).
 * Throws `TypeError` naming the bad part.
 *
 * @example
 * ```ts
 * parseRetentionPolicy("age=30d count=100000"); // { maxAgeMs: 2592000000, maxCount: 100000 }
 * ```
 */
export function parseRetentionPolicy(text: string): RetentionPolicy {
  const trimmed = text.trim();
  if (trimmed === "forever") return KEEP_FOREVER;
  const policy: { maxAgeMs?: number; maxCount?: number; maxBytes?: number; compactKey?: string } =
    {};
  const parts = trimmed.split(/[\s,]+/).filter((p) => p !== "");
  if (parts.length === 0) throw new TypeError(`"${text}" names no limit`);
  for (const part of parts) {
    const compact = /^compact=(.*)$/.exec(part);
    if (compact) {
      if (!/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/.test(compact[1]!)) {
        throw new TypeError(
          `"${part}": the key field is 1 to 64 letters, digits, "_" or "-", not starting with a digit`,
        );
      }
      policy.compactKey = compact[1]!;
      continue;
    }
    const m = /^(age|count|bytes)=(\d+)([A-Za-z]*)$/.exec(part);
    if (!m) {
      throw new TypeError(
        `"${part}" is not age=<duration>, count=<n>, bytes=<size> or compact=<field>`,
      );
    }
    const [, name, digits, unit] = m as unknown as [string, string, string, string];
    const n = Number(digits);
    if (name === "age") {
      const scale = DURATION_UNITS[unit];
      if (scale === undefined) throw new TypeError(`"${part}": the unit must be ms, s, m, h or d`);
      policy.maxAgeMs = checked(part, n * scale);
    } else if (name === "count") {
      if (unit !== "") throw new TypeError(`"${part}": a count has no unit`);
      policy.maxCount = checked(part, n);
    } else {
      const scale = BYTE_UNITS[unit === "" ? "B" : unit];
      if (scale === undefined) {
        throw new TypeError(`"${part}": the unit must be B, KiB, MiB, GiB or TiB`);
      }
      policy.maxBytes = checked(part, n * scale);
    }
  }
  return policy;
}

function checked(part: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`"${part}" must be at least 1 and below 2^53`);
  }
  return value;
}

/**
 * Parses rules separated by `;`, each `<broadcast prefix>: <policy>`:
 * `chat: age=30d; telemetry: bytes=1GiB`. Throws `TypeError`.
 */
export function parseRetentionRules(text: string): RetentionRule[] {
  const rules: RetentionRule[] = [];
  for (const part of text.split(";")) {
    if (part.trim() === "") continue;
    const colon = part.indexOf(":");
    if (colon < 0) throw new TypeError(`"${part.trim()}" is not <prefix>: <policy>`);
    const prefix = normalizePath(part.slice(0, colon).trim());
    const problem = pathProblem(prefix, false);
    if (problem) throw new TypeError(`"${part.trim()}": ${problem}`);
    if (rules.some((r) => r.prefix === prefix)) {
      throw new TypeError(`The prefix "${prefix}" has two rules`);
    }
    rules.push({ prefix, policy: parseRetentionPolicy(part.slice(colon + 1)) });
  }
  return rules;
}

/** The policy for a broadcast (canonical path): its longest covering rule's, else the default. */
export function retentionFor(
  config: Pick<RetentionConfig, "default" | "rules">,
  broadcast: string,
): RetentionPolicy {
  let best: RetentionRule | undefined;
  for (const rule of config.rules) {
    if (!prefixCovers(rule.prefix, broadcast)) continue;
    if (!best || rule.prefix.length > best.prefix.length) best = rule;
  }
  return best?.policy ?? config.default;
}

/** True when the policy removes anything ever. */
export function removesRecords(policy: RetentionPolicy): boolean {
  return policy.maxAgeMs !== undefined || policy.maxCount !== undefined ||
    policy.maxBytes !== undefined || policy.compactKey !== undefined;
}
