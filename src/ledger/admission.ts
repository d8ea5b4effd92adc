import type { DraftOutcome } from "./backend.ts";
import { CURRENT_EPOCH, type EntryDraft, type LedgerEntry } from "./entry.ts";

/** A batch decided: each draft's outcome, the entries to store, and the track's seal after them. */
export interface Admission {
  readonly outcomes: DraftOutcome[];
  readonly entries: LedgerEntry[];
  readonly seal: string | undefined;
}

/** A gate's check of one draft (see `CommitGate.open`): undefined admits it as `seq`. */
export type DraftCheck = (draft: EntryDraft, seq: number) => unknown;

/**
 * Numbers a batch from `first` in draft order. Without `check`, the track's
 * `seal` refuses every draft but redactions; with it (a gate's), the check
 * alone decides. A refused draft takes no number. Each stored entry that is
 * not a redaction carries the seal in force after it, so the newest such
 * entry tells a restarted single writer whether its track is sealed. Every
 * backend decides through this one function, so they all decide alike.
 */
export function admitBatch(
  drafts: readonly EntryDraft[],
  first: number,
  wallclock: bigint,
  seal: string | undefined,
  check?: DraftCheck,
): Admission {
  const outcomes: DraftOutcome[] = [];
  const entries: LedgerEntry[] = [];
  let next = first;
  for (const draft of drafts) {
    const redaction = draft.redacts !== undefined;
    const refusal = check ? check(draft, next) : undefined;
    if (refusal !== undefined) {
      outcomes.push({ refused: { reason: refusal } });
      continue;
    }
    if (!check && seal !== undefined && !redaction) {
      outcomes.push({ refused: { seal } });
      continue;
    }
    let entry: LedgerEntry;
    if (draft.seal === undefined && (seal === undefined || redaction)) {
      entry = { ...draft, epoch: CURRENT_EPOCH, seq: next++, wallclock };
    } else {
      const { seal: set, ...rest } = draft;
      if (!redaction && set !== undefined) seal = set === "" ? undefined : set;
      entry = {
        ...rest,
        epoch: CURRENT_EPOCH,
        seq: next++,
        wallclock,
        ...(!redaction && seal !== undefined ? { seal } : {}),
      };
    }
    entries.push(entry);
    outcomes.push({ entry, existing: false });
  }
  return { outcomes, entries, seal };
}

/** The seal after `entries` (oldest first) for a track sealed with `seal` before them. */
export function sealAfter(
  seal: string | undefined,
  entries: readonly LedgerEntry[],
): string | undefined {
  for (const entry of entries) if (entry.redacts === undefined) seal = entry.seal;
  return seal;
}
