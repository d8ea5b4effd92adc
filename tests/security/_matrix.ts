// The credentials every cell of the authorization matrix is tried with, and the policy's vocabulary.
// The resource is always broadcast `room/ab`: "sibling prefix" holds the right action on `room/a`,
// which a segment-aware prefix must not stretch to `room/ab`.
import {
  type Action,
  ACTIONS,
  createVerifier,
  MemoryKeySource,
  signToken,
  type Verifier,
} from "../../src/auth/mod.ts";
import { keySetOf, makeKey, type TestKey } from "../support/credentials.ts";
import { families, sampleValue } from "../support/prometheus.ts";
import type { TestRelay } from "../support/test_relay.ts";

/** The columns of the matrix. */
export const CREDENTIALS = [
  "no credential",
  "wrong scope",
  "sibling prefix",
  "expired",
  "removed key",
  "right scope",
] as const;
/** One column. */
export type CredentialKind = typeof CREDENTIALS[number];

/** The broadcast every request is about. */
export const BROADCAST = "room/ab";
/** Its sibling: a prefix that must not reach {@link BROADCAST}. */
export const SIBLING = "room/a";

/** Another broadcast, which the sibling prefix may see. */
export const MARKER = "room/a/marker";

/** What a request needs, per the declared policy. */
export type Need =
  /** Anyone who reaches the port. */
  | { readonly public: true }
  /** Any valid credential, whatever it grants (the relay admits a session that reaches anything). */
  | { readonly anyValid: true }
  /**
   * A credential allowing `action` (or `or`) on the broadcast, and `also` on
   * another one when set; `anyPrefix`: on any broadcast at all (a request
   * about no broadcast, such as a peer's GOAWAY).
   */
  | {
    readonly action: Action;
    readonly or?: Action;
    readonly also?: { readonly action: Action; readonly on: string };
    readonly anyPrefix?: boolean;
  }
  /** Nobody: refused whatever the credential; the credentials tried carry `tries`. */
  | { readonly never: string; readonly tries: Action };

/** A key set with a kept key and a key the test removes, and credentials signed by them. */
export class MatrixKeys {
  readonly source: MemoryKeySource;
  readonly verifier: Verifier;
  readonly #kept: TestKey;
  readonly #removed: TestKey;

  private constructor(
    source: MemoryKeySource,
    verifier: Verifier,
    kept: TestKey,
    removed: TestKey,
  ) {
    this.source = source;
    this.verifier = verifier;
    this.#kept = kept;
    this.#removed = removed;
  }

  /** Both keys trusted until {@link removeKey}. */
  static async create(): Promise<MatrixKeys> {
    const kept = await makeKey();
    const removed = await makeKey();
    const source = new MemoryKeySource(await keySetOf(kept, removed));
    return new MatrixKeys(source, await createVerifier(source), kept, removed);
  }

  /** Takes the second key out of the set (the "removed key" column's credentials fail from now). */
  async removeKey(): Promise<void> {
    this.source.replace(await keySetOf(this.#kept));
  }

  /** The credential of `kind` for a request that needs `need` (undefined: none is sent). */
  async credential(kind: CredentialKind, need: Need): Promise<string | undefined> {
    const actions: Action[] = "action" in need
      ? [need.action]
      : "tries" in need
      ? [need.tries]
      : ["subscribe"];
    // The actions that would satisfy the need, none of which a wrong scope holds.
    const satisfying: Action[] = "action" in need && need.or ? [...actions, need.or] : actions;
    const scopes = (prefix: string, granted: readonly Action[]) => [
      { actions: [...granted], broadcast: { prefix } },
      ...("action" in need && need.also
        ? [{ actions: [need.also.action], broadcast: { prefix: need.also.on } }]
        : []),
    ];
    const sign = (key: TestKey, s: ReturnType<typeof scopes>, now = Date.now) =>
      signToken(key.privateJwk, { sub: "mallory", scopes: s }, { ttlSeconds: 600, now });
    switch (kind) {
      case "no credential":
        return undefined;
      case "wrong scope":
        // Every other action, on the right broadcast.
        return await sign(
          this.#kept,
          scopes(BROADCAST, ACTIONS.filter((a) => !satisfying.includes(a))),
        );
      case "sibling prefix":
        return await sign(this.#kept, scopes(SIBLING, actions));
      case "expired":
        // Expired ten minutes ago: past the 60 s leeway.
        return await sign(this.#kept, scopes(BROADCAST, actions), () => Date.now() - 1_200_000);
      case "removed key":
        return await sign(this.#removed, scopes(BROADCAST, actions));
      case "right scope":
        return await sign(this.#kept, scopes(BROADCAST, actions));
    }
  }

  /** A credential with `actions` on `prefix`, for setting up what the cells read. */
  setup(actions: Action[], prefix = ""): Promise<string> {
    return signToken(this.#kept.privateJwk, {
      sub: "setup",
      scopes: [{ actions, broadcast: { prefix } }],
    }, { ttlSeconds: 600 });
  }
}

/** Whether the policy lets `kind` through for `need`. */
export function allowed(need: Need, kind: CredentialKind): boolean {
  if ("public" in need) return true;
  if ("never" in need) return false;
  const valid = kind === "right scope" || kind === "wrong scope" || kind === "sibling prefix";
  if ("anyValid" in need) return valid;
  return kind === "right scope" || (kind === "sibling prefix" && need.anyPrefix === true);
}

/** One cell's outcome against the policy, for the failure message. */
export interface CellResult {
  readonly cell: string;
  readonly expected: "allowed" | "denied";
  readonly got: string;
  readonly ok: boolean;
}

/**
 * Cells where the code does not yet do what the policy says, each with the
 * branch fixing it. Such a cell must still fail (so the entry is removed the
 * day it is fixed); every other cell must pass.
 */
export function verdict(
  results: readonly CellResult[],
  knownHoles: ReadonlyMap<string, string>,
): string[] {
  const problems: string[] = [];
  for (const r of results) {
    const hole = knownHoles.get(r.cell);
    if (hole === undefined && !r.ok) {
      problems.push(`${r.cell}: expected ${r.expected}, got ${r.got}`);
    }
    if (hole !== undefined && r.ok) {
      problems.push(`${r.cell}: the known hole (${hole}) is closed; remove it from KNOWN_HOLES`);
    }
  }
  return problems;
}

/** What reading needs: subscribe, or fetch. */
export const READ: Need = { action: "subscribe", or: "fetch" };

/** A relay metric's value (0 when it has no sample). */
export async function relayMetric(
  t: TestRelay,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return sampleValue(families(await (await t.get("/metrics")).text()), name, labels) ?? 0;
}
