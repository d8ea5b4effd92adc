/**
 * Track patterns: which tracks a per-track setting applies to, written as
 * a comma list of `<broadcast prefix>/<track>` entries. The prefix is
 * segment-aware (`room` covers `room/1` but not `roomy`) and may be absent
 * (every broadcast); the track is a name or `*` (every track).
 *
 * @module
 */
import { normalizePath, pathProblem, prefixCovers, trackNameProblem } from "./broadcast_path.ts";

/** One entry: a broadcast prefix (`""` covers every broadcast) and a track name, or `*`. */
export interface TrackPattern {
  /** Canonical broadcast prefix; `""` covers every broadcast. */
  readonly prefix: string;
  /** Track name, or `*` for every track. */
  readonly track: string;
}

/** A parsed list of track patterns; matches when any entry does. */
export class TrackPatterns {
  /** The entries, in the order written. */
  readonly entries: readonly TrackPattern[];

  /** Wraps parsed entries; use {@linkcode parseTrackPatterns} for text. */
  constructor(entries: readonly TrackPattern[]) {
    this.entries = entries;
  }

  /** True when no entry was given (nothing matches). */
  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** Whether track `track` of canonical broadcast `path` is covered by an entry. */
  matches(path: string, track: string): boolean {
    for (const e of this.entries) {
      if ((e.track === "*" || e.track === track) && prefixCovers(e.prefix, path)) return true;
    }
    return false;
  }

  /** The list as written back (`room/chat,*`), `""` when empty. */
  toString(): string {
    return this.entries.map((e) => (e.prefix === "" ? e.track : `${e.prefix}/${e.track}`)).join(
      ",",
    );
  }
}

/**
 * Parses `room/chat, alerts, sensors/*`: each entry is `<prefix>/<track>`,
 * `<track>` (any broadcast) or `*`. Throws a `SyntaxError` quoting the bad
 * entry.
 *
 * @example
 * ```ts
 * const p = parseTrackPatterns("room/chat,sensors/*");
 * p.matches("room/1", "chat"); // true
 * p.matches("room/1", "video"); // false
 * ```
 */
export function parseTrackPatterns(text: string): TrackPatterns {
  const entries: TrackPattern[] = [];
  for (const raw of text.split(",")) {
    const entry = raw.trim();
    if (entry === "") {
      throw new SyntaxError(`Cannot parse track pattern list "${text}": an entry is empty`);
    }
    const slash = entry.lastIndexOf("/");
    const prefix = slash < 0 ? "" : entry.slice(0, slash);
    const track = entry.slice(slash + 1);
    if (track !== "*") {
      const problem = trackNameProblem(track);
      if (problem) {
        throw new SyntaxError(`Cannot parse track pattern "${entry}": track name ${problem}`);
      }
    }
    if (slash >= 0) {
      const problem = prefix.includes("*")
        ? "has a wildcard (only the track may be *)"
        : pathProblem(prefix, false);
      if (problem) {
        throw new SyntaxError(`Cannot parse track pattern "${entry}": broadcast prefix ${problem}`);
      }
    }
    entries.push({ prefix: normalizePath(prefix), track });
  }
  return new TrackPatterns(entries);
}
