import { ClaimsError } from "./errors.ts";
import { joinPath, pathProblem, prefixCovers, trackNameProblem } from "../path/mod.ts";

/**
 * Something a credential may allow on a broadcast or track. `peer` marks
 * another relay of the mesh: the relay admits its session as a peer, which
 * may announce and subscribe within the scope's broadcasts.
 */
export type Action = "post" | "fetch" | "redact" | "publish" | "subscribe" | "peer";

/** Every action a scope may name, in a stable order. */
export const ACTIONS: readonly Action[] = [
  "post",
  "fetch",
  "redact",
  "publish",
  "subscribe",
  "peer",
];

/** How a scope selects broadcasts: one path exactly, or a path and everything beneath it. */
export type BroadcastMatch = { readonly exact: string } | { readonly prefix: string };

/** One entry of a credential's `scopes` claim. */
export interface Scope {
  /** What the scope allows. */
  readonly actions: readonly Action[];
  /** Which broadcasts it reaches. */
  readonly broadcast: BroadcastMatch;
  /** Which track of those broadcasts; absent covers every track. */
  readonly track?: { readonly exact: string };
}

/** The older `path_auth` claim: publish at `root/pub`, read at `root/sub`. */
export interface PathAuth {
  /** Path both grants are relative to; may be empty. */
  readonly root: string;
  /** Publishing is granted at `root/pub` and beneath it. */
  readonly pub?: string;
  /** Fetching and subscribing are granted at `root/sub` and beneath it. */
  readonly sub?: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function onlyKeys(value: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) throw new ClaimsError(`${where} has unknown member "${key}"`);
  }
}

function path(value: unknown, allowEmpty: boolean, where: string): string {
  if (typeof value !== "string") throw new ClaimsError(`${where} is not a string`);
  const problem = pathProblem(value, allowEmpty);
  if (problem !== undefined) throw new ClaimsError(`${where} "${value}" ${problem}`);
  return value;
}

/**
 * Reads one scope from untrusted JSON; throws `ClaimsError` naming what is wrong.
 * A leading slash in a broadcast path is refused, not normalised.
 */
export function parseScope(value: unknown, where = "scope"): Scope {
  if (!isRecord(value)) throw new ClaimsError(`${where} is not an object`);
  onlyKeys(value, ["actions", "broadcast", "track"], where);
  const { actions, broadcast, track } = value;
  if (!Array.isArray(actions) || actions.length === 0) {
    throw new ClaimsError(`${where}.actions is not a non-empty array`);
  }
  const parsedActions: Action[] = [];
  for (const action of actions) {
    if (typeof action !== "string" || !(ACTIONS as readonly string[]).includes(action)) {
      throw new ClaimsError(
        `${where}.actions has unknown action ${JSON.stringify(action)} (expected ${
          ACTIONS.join(", ")
        })`,
      );
    }
    if (!parsedActions.includes(action as Action)) parsedActions.push(action as Action);
  }
  if (!isRecord(broadcast)) throw new ClaimsError(`${where}.broadcast is not an object`);
  const exactGiven = "exact" in broadcast;
  const prefixGiven = "prefix" in broadcast;
  if (exactGiven === prefixGiven) {
    throw new ClaimsError(`${where}.broadcast needs exactly one of "exact" and "prefix"`);
  }
  onlyKeys(broadcast, ["exact", "prefix"], `${where}.broadcast`);
  const match: BroadcastMatch = exactGiven
    ? { exact: path(broadcast.exact, false, `${where}.broadcast.exact`) }
    : { prefix: path(broadcast.prefix, true, `${where}.broadcast.prefix`) };
  if (track === undefined) return { actions: parsedActions, broadcast: match };
  if (!isRecord(track)) throw new ClaimsError(`${where}.track is not an object`);
  onlyKeys(track, ["exact"], `${where}.track`);
  if (typeof track.exact !== "string") {
    throw new ClaimsError(`${where}.track.exact is not a string`);
  }
  const problem = trackNameProblem(track.exact);
  if (problem !== undefined) {
    throw new ClaimsError(`${where}.track.exact "${track.exact}" ${problem}`);
  }
  return { actions: parsedActions, broadcast: match, track: { exact: track.exact } };
}

/** Reads a `path_auth` claim from untrusted JSON; throws `ClaimsError` naming what is wrong. */
export function parsePathAuth(value: unknown, where = "path_auth"): PathAuth {
  if (!isRecord(value)) throw new ClaimsError(`${where} is not an object`);
  onlyKeys(value, ["root", "pub", "sub"], where);
  const root = path(value.root, true, `${where}.root`);
  const result: { root: string; pub?: string; sub?: string } = { root };
  for (const key of ["pub", "sub"] as const) {
    const part = value[key];
    if (part === undefined) continue;
    path(part, true, `${where}.${key}`);
    result[key] = part as string;
  }
  return result;
}

/**
 * The scopes a `path_auth` claim amounts to: publish at and beneath
 * root/pub; fetch and subscribe at and beneath root/sub; never post or redact.
 */
export function pathAuthScopes(pathAuth: PathAuth): Scope[] {
  const scopes: Scope[] = [];
  if (pathAuth.pub !== undefined) {
    scopes.push({
      actions: ["publish"],
      broadcast: { prefix: joinPath(pathAuth.root, pathAuth.pub) },
    });
  }
  if (pathAuth.sub !== undefined) {
    scopes.push({
      actions: ["fetch", "subscribe"],
      broadcast: { prefix: joinPath(pathAuth.root, pathAuth.sub) },
    });
  }
  return scopes;
}

/** Whether `scope` selects `broadcast` (ignoring actions and track). */
export function scopeReachesBroadcast(scope: Scope, broadcast: string): boolean {
  return "exact" in scope.broadcast
    ? scope.broadcast.exact === broadcast
    : prefixCovers(scope.broadcast.prefix, broadcast);
}

/**
 * Whether `scope` allows `action` on `broadcast`, and on `track` when given.
 * Without a track the question is whether the scope reaches some track of
 * the broadcast (what announcing or listing it needs).
 */
export function scopeAllows(
  scope: Scope,
  action: Action,
  broadcast: string,
  track?: string,
): boolean {
  if (!scope.actions.includes(action)) return false;
  if (!scopeReachesBroadcast(scope, broadcast)) return false;
  if (track === undefined || scope.track === undefined) return true;
  return scope.track.exact === track;
}
